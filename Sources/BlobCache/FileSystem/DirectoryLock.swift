import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The single-writer lock: `flock(2)` on `DIR/lock`, which holds the owner's pid as text.
/// Shell scripts can coordinate with it by `flock DIR/lock …`.
struct DirectoryLock: Sendable {
    let descriptor: FileDescriptor
    let path: FilePath
    let io: FileIO

    /// Takes the lock, failing with `inUse` (naming the holder's pid when known) unless `wait`.
    static func acquire(_ files: CacheFiles, io: FileIO, wait: Bool) throws -> DirectoryLock {
        let path = files.lock
        let fd = try io.open(path, .readWrite, options: [.create], permissions: FileIO.filePermissions)
        do {
            try io.system.lockExclusively(fd, wait: wait)
        } catch {
            let holder = (try? io.read(fd, count: 32, at: 0, path: path))
                .flatMap { Int32(String(decoding: $0, as: UTF8.self).trimmingWhitespace()) }
            io.close(fd)
            if error == .wouldBlock { throw BlobCacheError.inUse(path: files.root.string, pid: holder) }
            throw BlobCacheError.io(operation: "flock", path: path.string, errno: error)
        }
        let pid = Array("\(getpid())\n".utf8)
        try? io.truncate(fd, to: 0, path: path)
        try? pid.withUnsafeBytes { try io.writeAll(fd, $0, at: 0, path: path) }
        return DirectoryLock(descriptor: fd, path: path, io: io)
    }

    /// Releases the lock (closing the descriptor releases the flock).
    func release() {
        io.close(descriptor)
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
