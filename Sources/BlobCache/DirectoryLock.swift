import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// The single-writer lock: `flock(2)` on `DIR/lock`, which holds the owner's pid as text.
/// Shell scripts can coordinate with it by `flock DIR/lock …`.
struct DirectoryLock: Sendable {
    let descriptor: FileDescriptor
    let path: FilePath

    /// Takes the lock, failing with `inUse` (naming the holder's pid when known) unless `wait`.
    static func acquire(in directory: FilePath, wait: Bool) throws -> DirectoryLock {
        let path = directory.appending("lock")
        let fd = try FileIO.open(path, .readWrite, options: [.create], permissions: [.ownerReadWrite, .groupRead, .otherRead])
        var result: Int32
        repeat {
            result = flock(fd.rawValue, wait ? LOCK_EX : LOCK_EX | LOCK_NB)
        } while result != 0 && errno == EINTR
        if result != 0 {
            let failure = Errno.last
            let holder = (try? FileIO.read(fd, count: 32, at: 0, path: path))
                .flatMap { Int32(String(decoding: $0, as: UTF8.self).trimmingWhitespace()) }
            try? fd.close()
            if failure == .wouldBlock { throw BlobCacheError.inUse(path: directory.string, pid: holder) }
            throw BlobCacheError.io(operation: "flock", path: path.string, errno: failure)
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd.rawValue, 0)
        try? pid.withUnsafeBytes { try FileIO.writeAll(fd, $0, at: 0, path: path) }
        return DirectoryLock(descriptor: fd, path: path)
    }

    /// Releases the lock (closing the descriptor releases the flock).
    func release() {
        try? descriptor.close()
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}
