import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The real file system: each method is the POSIX call of its name.
///
///     let io = FileIO(PosixFileSystem())
struct PosixFileSystem: FileSystem {
    init() {}

    func open(_ path: CachePath, _ mode: FileDescriptor.AccessMode, options: FileDescriptor.OpenOptions,
              permissions: FilePermissions?) throws(Errno) -> FileDescriptor {
        try translating {
            try path.withPlatformString {
                try FileDescriptor.open($0, mode, options: options, permissions: permissions, retryOnInterrupt: true)
            }
        }
    }

    func close(_ fd: FileDescriptor) { try? fd.close() }

    func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        try translating { try fd.read(fromAbsoluteOffset: offset, into: buffer, retryOnInterrupt: true) }
    }

    func write(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        try translating { try fd.write(toAbsoluteOffset: offset, bytes, retryOnInterrupt: true) }
    }

    func sync(_ fd: FileDescriptor) throws(Errno) {
        #if canImport(Darwin)
        // Darwin's fsync leaves the data in the drive's own cache, which power loss takes:
        // F_FULLFSYNC flushes that too. A file system without it (some network and FUSE ones
        // answer ENOTSUP, EOPNOTSUPP, ENOTTY or EINVAL) gets fsync, the most it offers; any
        // other failure (EIO) is thrown, not hidden behind an fsync that might pass.
        if fcntl(fd.rawValue, F_FULLFSYNC) == 0 { return }
        switch errno {
        case ENOTSUP, EOPNOTSUPP, ENOTTY, EINVAL: break
        default: throw Errno.last
        }
        #endif
        try check(fsync(fd.rawValue))
    }
    func setPermissions(_ fd: FileDescriptor, _ permissions: FilePermissions) throws(Errno) {
        try check(fchmod(fd.rawValue, permissions.rawValue))
    }
    func syncData(_ fd: FileDescriptor) throws(Errno) {
        #if canImport(Darwin)
        try sync(fd)   // no public fdatasync, and only F_FULLFSYNC empties the drive's cache
        #else
        try check(fdatasync(fd.rawValue))
        #endif
    }
    func truncate(_ fd: FileDescriptor, to length: Int64) throws(Errno) { try check(ftruncate(fd.rawValue, off_t(length))) }

    func rename(_ source: CachePath, to destination: CachePath) throws(Errno) {
        try check(source.withPlatformString { from in destination.withPlatformString { to in posixRename(from, to) } })
    }

    func unlink(_ path: CachePath) throws(Errno) { try check(path.withPlatformString { posixUnlink($0) }) }

    func makeDirectory(_ path: CachePath, permissions: FilePermissions) throws(Errno) {
        try check(path.withPlatformString { mkdir($0, mode_t(permissions.rawValue)) })
    }

    func removeDirectory(_ path: CachePath) throws(Errno) { try check(path.withPlatformString { rmdir($0) }) }

    func listDirectory(_ path: CachePath) throws(Errno) -> [String] {
        guard let dir = path.withPlatformString({ opendir($0) }) else { throw Errno.last }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            // The name where it lies: a record is only as long as its name, so copying the
            // whole `d_name` array could read past the end of the last one.
            let name = String(cString: UnsafeRawPointer(entry).advanced(by: MemoryLayout<dirent>.offset(of: \dirent.d_name)!)
                .assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    func status(_ path: CachePath) throws(Errno) -> stat {
        var info = stat()
        try check(path.withPlatformString { lstat($0, &info) })
        return info
    }

    func status(_ fd: FileDescriptor) throws(Errno) -> stat {
        var info = stat()
        try check(fstat(fd.rawValue, &info))
        return info
    }

    func map(_ fd: FileDescriptor, length: Int, shared: Bool, populate: Bool) throws(Errno) -> UnsafeMutableRawPointer {
        #if os(Linux)
        let flags = (shared ? MAP_SHARED : MAP_PRIVATE) | (populate ? MAP_POPULATE : 0)
        #else
        let flags = shared ? MAP_SHARED : MAP_PRIVATE
        #endif
        guard let base = mmap(nil, length, PROT_READ, flags, fd.rawValue, 0), base != MAP_FAILED else { throw Errno.last }
        #if !os(Linux)
        // No MAP_POPULATE: ask for the pages to be read ahead instead (a hint; its failure
        // changes nothing but speed).
        if populate { _ = madvise(base, length, MADV_WILLNEED) }
        #endif
        return base
    }

    func mapWritable(_ fd: FileDescriptor, length: Int) throws(Errno) -> UnsafeMutableRawPointer {
        guard let base = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd.rawValue, 0), base != MAP_FAILED else {
            throw Errno.last
        }
        return base
    }

    func unmap(_ address: UnsafeMutableRawPointer, length: Int) { munmap(address, length) }

    func unlock(_ fd: FileDescriptor) { _ = flock(fd.rawValue, LOCK_UN) }

    func lockByte(_ fd: FileDescriptor, at offset: Int64, _ kind: ByteLock) throws(Errno) {
        #if os(Linux)
        var range = flock()
        switch kind {
        case .shared: range.l_type = Int16(F_RDLCK)
        case .exclusive: range.l_type = Int16(F_WRLCK)
        case .unlocked: range.l_type = Int16(F_UNLCK)
        }
        range.l_whence = Int16(SEEK_SET)
        range.l_start = off_t(offset)
        range.l_len = 1
        var result: Int32
        repeat {
            result = fcntl(fd.rawValue, Self.setOpenFileDescriptionLock, &range)
        } while result != 0 && errno == EINTR
        try check(result)
        #else
        throw Errno.notSupported   // never alone: an open leaves others' tails alone
        #endif
    }

    /// `F_OFD_SETLK` (Linux 3.15; Glibc spells it only under `_GNU_SOURCE`).
    private static let setOpenFileDescriptionLock: Int32 = 37

    func lockExclusively(_ fd: FileDescriptor, wait: Bool) throws(Errno) {
        var result: Int32
        repeat {
            result = flock(fd.rawValue, wait ? LOCK_EX : LOCK_EX | LOCK_NB)
        } while result != 0 && errno == EINTR
        try check(result)
    }

    private func check(_ result: Int32) throws(Errno) {
        if result != 0 { throw Errno.last }
    }

    private func translating<T>(_ body: () throws -> T) throws(Errno) -> T {
        do { return try body() } catch let failure as Errno { throw failure } catch { throw Errno.ioError }
    }
}

extension Errno {
    /// The calling thread's `errno` after a failed call.
    static var last: Errno { Errno(rawValue: errno) }
}

private func posixRename(_ from: UnsafePointer<CChar>, _ to: UnsafePointer<CChar>) -> Int32 { rename(from, to) }
private func posixUnlink(_ path: UnsafePointer<CChar>) -> Int32 { unlink(path) }
