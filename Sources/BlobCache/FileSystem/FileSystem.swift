import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Every system call the cache makes on its directory, in one place: the seam where tests
/// inject failures, crashes and power loss (`Tests/BlobCacheTests/Faults/`). Each method is
/// one call (or one retry-on-EINTR loop) and reports failure as the call's `Errno`; `FileIO`
/// turns that into a `BlobCacheError` naming the path.
///
/// The production implementation is `PosixFileSystem`. An implementation must be safe to call
/// from any thread: reads run outside the cache's lock.
protocol FileSystem: Sendable {
    func open(_ path: CachePath, _ mode: FileDescriptor.AccessMode, options: FileDescriptor.OpenOptions,
              permissions: FilePermissions?) throws(Errno) -> FileDescriptor
    /// Closes a descriptor. Not a fault point: closing changes nothing on disk.
    func close(_ fd: FileDescriptor)
    func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int
    func write(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) -> Int
    /// `fsync`: the file's data and metadata (a directory's entries, for a directory). On
    /// Darwin `fcntl(F_FULLFSYNC)`, whose `fsync` stops short of the drive's own cache.
    func sync(_ fd: FileDescriptor) throws(Errno)
    /// `fdatasync`: the file's data and the size that reads it back (`sync` where there is none).
    func syncData(_ fd: FileDescriptor) throws(Errno)
    func truncate(_ fd: FileDescriptor, to length: Int64) throws(Errno)
    func rename(_ source: CachePath, to destination: CachePath) throws(Errno)
    func unlink(_ path: CachePath) throws(Errno)
    func makeDirectory(_ path: CachePath, permissions: FilePermissions) throws(Errno)
    func removeDirectory(_ path: CachePath) throws(Errno)
    /// The names in a directory, without `.` and `..`.
    func listDirectory(_ path: CachePath) throws(Errno) -> [String]
    /// `lstat`: a symbolic link is described, not followed.
    func status(_ path: CachePath) throws(Errno) -> stat
    func status(_ fd: FileDescriptor) throws(Errno) -> stat
    /// `mmap` of `length` bytes from offset 0, read-only; `shared` sees later writes to the file.
    func map(_ fd: FileDescriptor, length: Int, shared: Bool, populate: Bool) throws(Errno) -> UnsafeMutableRawPointer
    /// `mmap` of `length` bytes from offset 0, shared and writable (the change sequence every
    /// process of a cache maps, `ChangeSequence`).
    func mapWritable(_ fd: FileDescriptor, length: Int) throws(Errno) -> UnsafeMutableRawPointer
    func unmap(_ address: UnsafeMutableRawPointer, length: Int)
    /// `flock(LOCK_EX)`, failing with `EWOULDBLOCK` at once unless `wait`.
    func lockExclusively(_ fd: FileDescriptor, wait: Bool) throws(Errno)
    /// `flock(LOCK_UN)`. Not a fault point: releasing changes nothing on disk.
    func unlock(_ fd: FileDescriptor)
    /// An open-file-description lock (`F_OFD_SETLK`) on the byte at `offset`, shared or
    /// exclusive (or given back), failing with `EAGAIN` at once when it conflicts; independent
    /// of `flock`, and given up when the file is closed. `DIR/lock` uses byte 0 for presence
    /// (every open cache holds it shared; taking it exclusively tells an open that it is
    /// alone) and byte 1 for maintenance (held exclusively while a pack collection runs).
    func lockByte(_ fd: FileDescriptor, at offset: Int64, _ kind: ByteLock) throws(Errno)
    /// `fchmod`: sets an open file's or directory's mode bits (whatever the umask took away).
    func setPermissions(_ fd: FileDescriptor, _ permissions: FilePermissions) throws(Errno)
}

/// What `FileSystem.lockByte` does to a byte's lock.
enum ByteLock: Sendable {
    case shared, exclusive, unlocked
}

/// The kinds of call the seam counts, for fault injection and for reports of what a test ran.
enum FileSystemCall: String, CaseIterable, Sendable {
    case open, read, write, sync, syncData, truncate, rename, unlink, makeDirectory, removeDirectory
    case listDirectory, status, map, lock, setPermissions
}
