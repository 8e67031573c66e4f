import ArgumentParser
import BlobCache
#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#elseif canImport(Darwin)
@preconcurrency import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Standard input and output, and the files `put` reads and `get -o` writes, as the shell
/// treats them: `-` is standard input or output; a file is opened as `>` opens it (following a
/// symbolic link, keeping its mode, owner and hard links, truncated); anything readable is read
/// (a FIFO, `/dev/null`, `<(cmd)`); and every write error is one line and exit 2, never a trap.
enum Streams {
    /// Opens the file at `path` for reading (`-`: standard input, not opened again). A path
    /// that cannot be opened exits 2 with one line giving the system's reason.
    static func openInput(_ path: String) throws -> Input {
        if path == "-" { return Input(fd: STDIN_FILENO, name: "standard input", owned: false) }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("cannot read \(path)") }
        return Input(fd: fd, name: path, owned: true)
    }

    /// A file being read to its end.
    struct Input {
        let fd: Int32
        let name: String
        let owned: Bool

        /// Feeds every byte until the end into `pending`, a megabyte at a time; a read error
        /// cancels it and exits 2 with one line. `pending`'s own errors (the cap passed) are thrown.
        func feed(_ pending: PendingSet) throws {
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
            defer { chunk.deallocate() }
            while true {
                let count = read(fd, chunk.baseAddress, chunk.count)
                if count == 0 { return }
                if count < 0 {
                    if errno == EINTR { continue }
                    let failure = Streams.failure("cannot read \(name)")
                    pending.cancel()
                    throw failure
                }
                try pending.append(UnsafeRawBufferPointer(rebasing: chunk[..<count]))
            }
        }

        func close() { if owned { closeDescriptor(fd) } }
    }

    /// Opens `path` for a value's bytes as `>` would (`-`: standard output, after anything
    /// `print` buffered): created when missing (mode 0666 less the umask), truncated, through a
    /// symbolic link, keeping an existing file's mode, owner and hard links; a directory is
    /// refused with one line and exit 2.
    static func openOutput(_ path: String) throws -> Output {
        if path == "-" {
            fflush(stdout)
            return Output(fd: STDOUT_FILENO, name: "standard output", owned: false)
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard fd >= 0 else { throw failure("write to \(path)") }
        return Output(fd: fd, name: path, owned: true)
    }

    /// A file a value is written to as it is read.
    struct Output {
        let fd: Int32
        let name: String
        let owned: Bool

        /// Writes all of `bytes`; a failure exits 2 with one line.
        func write(_ bytes: UnsafeRawBufferPointer) throws { try Streams.write(bytes, to: fd, named: name) }

        /// Takes back what was written: a file it opened is truncated to nothing (a half value
        /// is never left behind); what went to standard output cannot be taken back, and the
        /// exit status says it is not the value.
        func discardWritten() { if owned { _ = ftruncate(fd, 0) } }

        func close() { if owned { closeDescriptor(fd) } }
    }

    /// Writes `bytes` to `path` (`-`: standard output) as `>` would (`openOutput`). When a write
    /// fails, what was written is truncated away and it exits 2.
    static func write(_ bytes: [UInt8], toFile path: String) throws {
        let output = try openOutput(path)
        defer { output.close() }
        do {
            try bytes.withUnsafeBytes { try output.write($0) }
        } catch {
            output.discardWritten()
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
        try bytes.withUnsafeBytes { try write($0, to: fd, named: name, reporting: reporting) }
    }

    /// Writes all of `bytes` to `fd`, retrying short writes and EINTR.
    static func write(_ bytes: UnsafeRawBufferPointer, to fd: Int32, named name: String, reporting: Bool = true) throws {
        var offset = 0
        while offset < bytes.count {
            let count = systemWrite(fd, bytes.baseAddress! + offset, bytes.count - offset)
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
                _ = line.withUnsafeBytes { systemWrite(STDERR_FILENO, $0.baseAddress, $0.count) }
                _exit(Failure.error)
            }
        }
    }
}

/// write(2), named apart from the `write` methods here (it was reached as `Foundation.write`,
/// which FoundationEssentials does not re-export).
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, buffer, count) }

/// close(2) under a name a type's own `close()` does not hide, on every C library.
private func closeDescriptor(_ fd: Int32) { _ = close(fd) }
