import BlobCache
import ArgumentParser
import Crypto
import Foundation

/// The key of an encrypted cache, read from a file: 32 raw bytes, or 64 hexadecimal digits
/// and an optional newline (`--key-file`, `$BLOBCACHE_KEY_FILE`).
enum KeyFile {
    /// The encryption a key file gives; a file that is missing, unreadable or of another form
    /// exits 9 with a one-line message.
    static func encryption(at path: String) throws -> BlobCache.Encryption {
        // Read, not stat'ed: a pipe (`--key-file <(pass show cache-key)`) has no size. At most a
        // byte more than the longest form (64 hex digits and CR LF), so nothing reads forever.
        guard let handle = FileHandle(forReadingAtPath: path), let data = try? handle.read(upToCount: 67) ?? Data() else {
            Failure.say("key file \(path) cannot be read")
            throw ExitCode(Failure.keyProblem)
        }
        try? handle.close()
        guard let key = parse(Array(data)) else {
            Failure.say("key file \(path) must hold 32 raw bytes, or 64 hexadecimal digits and an optional newline (it has \(data.count == 67 ? "more than 66" : "\(data.count)") bytes)")
            throw ExitCode(Failure.keyProblem)
        }
        return .aesGCM(key: SymmetricKey(data: key))
    }

    /// The remote authentication key in a file of the same forms (`--remote-key-file`). As ssh
    /// does with private keys, a regular file that its group or others may read or write is
    /// refused (exit 9, saying which mode to set): a key others can read authenticates nothing.
    static func remoteAuthenticationKey(at path: String) throws -> SymmetricKey {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            Failure.say("remote key file \(path) cannot be read")
            throw ExitCode(Failure.keyProblem)
        }
        defer { try? handle.close() }
        var status = stat()
        if fstat(handle.fileDescriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_mode & 0o077 != 0 {
            Failure.say("remote key file \(path) is readable or writable by others (mode \(String(status.st_mode & 0o777, radix: 8))): chmod 600 \(path)")
            throw ExitCode(Failure.keyProblem)
        }
        guard let data = try? handle.read(upToCount: 67) ?? Data(), let key = parse(Array(data)) else {
            Failure.say("remote key file \(path) must hold 32 raw bytes, or 64 hexadecimal digits and an optional newline")
            throw ExitCode(Failure.keyProblem)
        }
        return SymmetricKey(data: key)
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
            guard let high = nibble(text[index]), let low = nibble(text[index + 1]) else { return nil }
            key.append(high << 4 | low)
            index += 2
        }
        return key
    }

    private static func nibble(_ char: UInt8) -> UInt8? {
        switch char {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): char - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): char - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): char - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
