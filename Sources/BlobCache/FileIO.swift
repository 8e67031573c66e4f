import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX file operations the store needs, each turning failure into a `BlobCacheError`
/// that names the path. Thin on purpose: one syscall (or one retry loop) each.
extension Errno {
    /// The calling thread's `errno` after a failed call.
    static var last: Errno { Errno(rawValue: errno) }
}

enum FileIO {
    /// Opens `path`, retrying on EINTR.
    static func open(_ path: FilePath, _ mode: FileDescriptor.AccessMode,
                     options: FileDescriptor.OpenOptions = [], permissions: FilePermissions? = nil) throws -> FileDescriptor {
        do {
            return try FileDescriptor.open(path, mode, options: options.union(.closeOnExec),
                                           permissions: permissions, retryOnInterrupt: true)
        } catch let errno as Errno {
            throw BlobCacheError.io(operation: "open", path: path.string, errno: errno)
        }
    }

    /// Opens `path` (for reading unless told); `nil` when it does not exist.
    static func openIfExists(_ path: FilePath, _ mode: FileDescriptor.AccessMode = .readOnly) throws -> FileDescriptor? {
        do {
            return try FileDescriptor.open(path, mode, options: .closeOnExec, retryOnInterrupt: true)
        } catch Errno.noSuchFileOrDirectory {
            return nil
        } catch let errno as Errno {
            throw BlobCacheError.io(operation: "open", path: path.string, errno: errno)
        }
    }

    /// Writes all of `bytes` at the current offset.
    static func writeAll(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, path: FilePath) throws {
        do { _ = try fd.writeAll(bytes) } catch let errno as Errno {
            throw BlobCacheError.io(operation: "write", path: path.string, errno: errno)
        }
    }

    /// Writes all of `bytes` at `offset`.
    static func writeAll(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: FilePath) throws {
        do { _ = try fd.writeAll(toAbsoluteOffset: offset, bytes) } catch let errno as Errno {
            throw BlobCacheError.io(operation: "write", path: path.string, errno: errno)
        }
    }

    /// Reads up to `count` bytes at `offset`; fewer only at end of file.
    static func read(_ fd: FileDescriptor, count: Int, at offset: Int64, path: FilePath) throws -> [UInt8] {
        var filled = 0
        var failure: Errno?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { storage, initialized in
            let raw = UnsafeMutableRawBufferPointer(storage)
            while filled < count {
                do {
                    let n = try fd.read(fromAbsoluteOffset: offset + Int64(filled),
                                        into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]),
                                        retryOnInterrupt: true)
                    if n == 0 { break }
                    filled += n
                } catch {
                    failure = error as? Errno ?? .ioError
                    break
                }
            }
            initialized = filled
        }
        if let failure { throw BlobCacheError.io(operation: "read", path: path.string, errno: failure) }
        return bytes
    }

    /// Reads a whole file; `nil` when it does not exist.
    static func readWholeFile(_ path: FilePath) throws -> [UInt8]? {
        guard let fd = try openIfExists(path) else { return nil }
        defer { try? fd.close() }
        let size = try fileSize(fd, path: path)
        return try read(fd, count: Int(size), at: 0, path: path)
    }

    /// The size of an open file.
    static func fileSize(_ fd: FileDescriptor, path: FilePath) throws -> Int64 {
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0 else {
            throw BlobCacheError.io(operation: "stat", path: path.string, errno: .last)
        }
        return Int64(info.st_size)
    }

    /// The status of `path`, or `nil` when it does not exist.
    static func status(_ path: FilePath) -> stat? {
        var info = stat()
        return path.withPlatformString { lstat($0, &info) } == 0 ? info : nil
    }

    /// Flushes a file's data and metadata to stable storage.
    static func sync(_ fd: FileDescriptor, path: FilePath) throws {
        guard fsync(fd.rawValue) == 0 else {
            throw BlobCacheError.io(operation: "fsync", path: path.string, errno: .last)
        }
    }

    /// Flushes a directory's entries (new, renamed or removed names) to stable storage.
    static func syncDirectory(_ path: FilePath) throws {
        let fd = try open(path, .readOnly, options: .directory)
        defer { try? fd.close() }
        try sync(fd, path: path)
    }

    /// Cuts a file to `length` bytes.
    static func truncate(_ fd: FileDescriptor, to length: Int64, path: FilePath) throws {
        guard ftruncate(fd.rawValue, off_t(length)) == 0 else {
            throw BlobCacheError.io(operation: "truncate", path: path.string, errno: .last)
        }
    }

    /// Atomically replaces `destination` with `source`.
    static func rename(_ source: FilePath, to destination: FilePath) throws {
        let result = source.withPlatformString { from in
            destination.withPlatformString { to in posixRename(from, to) }
        }
        guard result == 0 else {
            throw BlobCacheError.io(operation: "rename", path: source.string + " -> " + destination.string, errno: .last)
        }
    }

    /// Removes a file; a missing file is not an error. Returns whether it existed.
    @discardableResult
    static func remove(_ path: FilePath) throws -> Bool {
        if path.withPlatformString({ unlink($0) }) == 0 { return true }
        let errno = Errno.last
        if errno == .noSuchFileOrDirectory { return false }
        throw BlobCacheError.io(operation: "unlink", path: path.string, errno: errno)
    }

    /// Removes an empty directory; returns false when it is missing or not empty.
    @discardableResult
    static func removeDirectory(_ path: FilePath) -> Bool {
        path.withPlatformString { rmdir($0) } == 0
    }

    /// Creates a directory; an existing directory is fine. Returns true when it was created.
    @discardableResult
    static func makeDirectory(_ path: FilePath) throws -> Bool {
        if path.withPlatformString({ mkdir($0, 0o755) }) == 0 { return true }
        let errno = Errno.last
        if errno == .fileExists, let info = status(path), (info.st_mode & S_IFMT) == S_IFDIR { return false }
        throw BlobCacheError.io(operation: "mkdir", path: path.string, errno: errno)
    }

    /// The names in a directory (without `.` and `..`); empty when it does not exist.
    static func listDirectory(_ path: FilePath) -> [String] {
        guard let dir = path.withPlatformString({ opendir($0) }) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Whether `path` names a directory.
    static func isDirectory(_ path: FilePath) -> Bool {
        guard let info = status(path) else { return false }
        return (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Whether `path` names a regular file.
    static func isRegularFile(_ path: FilePath) -> Bool {
        guard let info = status(path) else { return false }
        return (info.st_mode & S_IFMT) == S_IFREG
    }
}

private func posixRename(_ from: UnsafePointer<CChar>, _ to: UnsafePointer<CChar>) -> Int32 { rename(from, to) }
