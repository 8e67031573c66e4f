import ArgumentParser
#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Foundation

/// Standard input and output, and the files `put` reads and `get -o` writes, as the shell
/// treats them: `-` is standard input or output; a file is opened as `>` opens it (following a
/// symbolic link, keeping its mode, owner and hard links, truncated); anything readable is read
/// (a FIFO, `/dev/null`, `<(cmd)`); and every write error is one line and exit 2, never a trap.
enum Streams {
    /// Every byte of the file at `path` (`-`: standard input) until its end. A path that cannot
    /// be opened or read exits 2 with one line giving the system's reason.
    static func readAll(_ path: String) throws -> [UInt8] {
        if path == "-" { return try readAll(from: STDIN_FILENO, named: "standard input") }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("cannot read \(path)") }
        defer { close(fd) }
        return try readAll(from: fd, named: path)
    }

    /// Every byte `fd` gives until its end.
    static func readAll(from fd: Int32, named name: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count == 0 { return bytes }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("cannot read \(name)")
            }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    /// Writes `bytes` to `path` (`-`: standard output) as `>` would: created when missing
    /// (mode 0666 less the umask), truncated, through a symbolic link, keeping an existing
    /// file's mode, owner and hard links; a directory is refused. When a write fails, what was
    /// written is truncated away (a half value is never left behind) and it exits 2.
    static func write(_ bytes: [UInt8], toFile path: String) throws {
        if path == "-" { return try writeStandardOutput(bytes) }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard fd >= 0 else { throw failure("write to \(path)") }
        defer { close(fd) }
        do {
            try write(bytes, to: fd, named: path)
        } catch {
            _ = ftruncate(fd, 0)
            throw error
        }
    }

    /// Writes `bytes` to standard output after anything `print` buffered.
    static func writeStandardOutput(_ bytes: [UInt8]) throws {
        fflush(stdout)
        try write(bytes, to: STDOUT_FILENO, named: "standard output")
    }

    /// Writes `text` to standard output after anything `print` buffered.
    static func writeStandardOutput(_ text: String) throws { try writeStandardOutput(Array(text.utf8)) }

    /// Writes `text` to standard error; a failure is ignored (there is nowhere left to say it),
    /// never a trap.
    static func writeStandardError(_ text: String) {
        try? write(Array(text.utf8), to: STDERR_FILENO, named: "standard error", reporting: false)
    }

    /// Writes all of `bytes` to `fd`, retrying short writes and EINTR.
    static func write(_ bytes: [UInt8], to fd: Int32, named name: String, reporting: Bool = true) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0 {
                if errno == EINTR { continue }
                if !reporting { throw ExitCode(Failure.error) }
                throw failure("write to \(name)")
            }
            offset += count
        }
    }

    /// One line, `blobcache: WHAT: <the system's reason>`, and the exit code 2.
    static func failure(_ what: String) -> ExitCode {
        let reason = String(cString: strerror(errno))
        Failure.say("\(what): \(reason)")
        return ExitCode(Failure.error)
    }

    /// Makes a failed write of what `print` buffered for standard output (a full disk, a
    /// closed pipe with SIGPIPE ignored, /dev/full) one line and exit 2 at the process's end,
    /// instead of output silently lost under an exit status of 0.
    static func checkStandardOutputAtExit() {
        atexit {
            if fflush(stdout) != 0 || ferror(stdout) != 0 {
                let reason = String(cString: strerror(errno == 0 ? EIO : errno))
                let line = Array("blobcache: write to standard output: \(reason)\n".utf8)
                _ = line.withUnsafeBytes { Foundation.write(STDERR_FILENO, $0.baseAddress, $0.count) }
                _exit(Failure.error)
            }
        }
    }
}
