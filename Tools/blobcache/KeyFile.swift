import BlobCache
import ArgumentParser
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The key of an encrypted cache, read from a file: 32 raw bytes, or 64 hexadecimal digits
/// and an optional newline (`--key-file`, `$BLOBCACHE_KEY_FILE`).
enum KeyFile {
    /// The encryption a key file gives; a file that is missing, unreadable, of another form or
    /// that others may read exits 9 with a one-line message.
    static func encryption(at path: String) throws -> BlobCache.Encryption {
        .aesGCM(key: SymmetricKey(data: try key(at: path, named: "key file")))
    }

    /// The remote authentication key in a file of the same forms (`--remote-key-file`).
    static func remoteAuthenticationKey(at path: String) throws -> SymmetricKey {
        SymmetricKey(data: try key(at: path, named: "remote key file"))
    }

    /// The 32 key bytes in the file at `path`. As ssh does with private keys, a regular file its
    /// group or others may read or write is refused, saying which mode to set (a key others can
    /// read protects nothing), and so is one reached through a symbolic link that is owned by
    /// someone but the user or root. A pipe (`<(pass show cache-key)`) is read as it is.
    private static func key(at path: String, named label: String) throws -> [UInt8] {
        // Read, not stat'ed for its size: a pipe has none. At most a byte more than the longest
        // form (64 hex digits and CR LF), so nothing reads forever.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            Failure.say("\(label) \(path) cannot be read: \(String(cString: strerror(errno)))")
            throw ExitCode(Failure.keyProblem)
        }
        defer { close(descriptor) }
        var status = stat()
        if fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG {
            if status.st_mode & 0o077 != 0 {
                Failure.say("\(label) \(path) may be read or written by others (mode \(String(status.st_mode & 0o777, radix: 8))): chmod 600 \(path)")
                throw ExitCode(Failure.keyProblem)
            }
            if status.st_uid != getuid() && status.st_uid != 0 {
                Failure.say("\(label) \(path) belongs to another user (uid \(status.st_uid)): use a key file of your own")
                throw ExitCode(Failure.keyProblem)
            }
        }
        let data = readPrefix(of: descriptor, limit: 67)
        guard let data, let key = parse(Array(data)) else {
            let size = data.map { $0.count == 67 ? "more than 66" : "\($0.count)" } ?? "unreadable"
            Failure.say("\(label) \(path) must hold 32 raw bytes, or 64 hexadecimal digits and an optional newline (it has \(size) bytes)")
            throw ExitCode(Failure.keyProblem)
        }
        return key
    }

    /// Up to `limit` bytes from `descriptor`, fewer only at its end; nil when a read fails. Plain
    /// read(2) in place of `FileHandle` (full Foundation), as a pipe needs: a short read is
    /// not the end.
    private static func readPrefix(of descriptor: Int32, limit: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: limit)
        var count = 0
        while count < limit {
            let got = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + count, limit - count) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { return nil }
            if got == 0 { break }
            count += got
        }
        return Array(bytes[..<count])
    }

    /// The 32 key bytes in `bytes`, or `nil` when they are not of either form.
    static func parse(_ bytes: [UInt8]) -> [UInt8]? {
        if bytes.count == 32 { return bytes }
        var text = bytes[...]
        if text.last == UInt8(ascii: "\n") { text = text.dropLast() }
        if text.last == UInt8(ascii: "\r") { text = text.dropLast() }
        guard text.count == 64 else { return nil }
        var key: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            guard let high = HexDigit.value(of: text[index]), let low = HexDigit.value(of: text[index + 1]) else { return nil }
            key.append(high << 4 | low)
            index += 2
        }
        return key
    }
}
