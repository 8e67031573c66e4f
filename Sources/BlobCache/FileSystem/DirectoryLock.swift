import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The single-writer lock: `flock(2)` on `DIR/lock`, which holds the owner's pid as text while
/// it is held and is emptied by a clean close. Shell scripts can coordinate with it by
/// `flock DIR/lock …`.
struct DirectoryLock: Sendable {
    let descriptor: FileDescriptor
    let path: FilePath
    let io: FileIO
    /// Whether the file still held a pid when the lock was taken: the last holder did not
    /// close cleanly (it crashed), so it may have left staged files behind.
    let previousHolderCrashed: Bool

    /// Takes the lock, failing with `inUse` (naming the holder's pid when known) unless `wait`.
    /// A directory that is not a cache's is refused first, before the lock file is made in it
    /// (`CacheDirectory.claim`); a cache without `CACHEDIR.TAG` gets one once the lock is held.
    static func acquire(_ files: CacheFiles, io: FileIO, wait: Bool) throws -> DirectoryLock {
        try CacheDirectory.claim(files, io: io)
        let path = files.lock
        let fd = try io.open(path, .readWrite, options: [.create], permissions: io.filePermissions)
        do {
            try io.system.lockExclusively(fd, wait: wait)
        } catch {
            let holder = (try? io.read(fd, count: 32, at: 0, path: path))
                .flatMap { Int32(String(decoding: $0, as: UTF8.self).trimmingWhitespace()) }
            io.close(fd)
            if error == .wouldBlock { throw BlobCacheError.inUse(path: files.root.string, pid: holder) }
            throw BlobCacheError.io(operation: "flock", path: path.string, errno: error)
        }
        CacheDirectory.tagIfNeeded(files, io: io)
        let previous = (try? io.read(fd, count: 32, at: 0, path: path)) ?? []
        let pid = Array("\(getpid())\n".utf8)
        try? io.truncate(fd, to: 0, path: path)
        try? pid.withUnsafeBytes { try io.writeAll(fd, $0, at: 0, path: path) }
        return DirectoryLock(descriptor: fd, path: path, io: io,
                             previousHolderCrashed: previous.contains { !Character(UnicodeScalar($0)).isWhitespace })
    }

    /// Releases the lock (closing the descriptor releases the flock). `cleanly` empties the
    /// file first, telling the next holder that nothing was left half done.
    func release(cleanly: Bool = false) {
        if cleanly { try? io.truncate(descriptor, to: 0, path: path) }
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
