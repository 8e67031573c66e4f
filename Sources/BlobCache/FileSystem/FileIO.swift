import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The file operations the cache needs, over a `FileSystem`, each turning failure into a
/// `BlobCacheError` that names the path. Thin on purpose: one call (or one loop of them) each.
/// Everything under the cache directory is read and written through one of these.
///
///     let io = FileIO(PosixFileSystem())
///     let bytes = try io.readWholeFile(path)
struct FileIO: Sendable {
    let system: any FileSystem
    /// Whether the files and directories it creates are for the owner's group too: only in a
    /// cache directory whose group may read, write and enter it (docs/SECURITY.md).
    let sharedWithGroup: Bool

    init(_ system: any FileSystem, sharedWithGroup: Bool = false) {
        self.system = system
        self.sharedWithGroup = sharedWithGroup
    }

    /// This file system, creating files as `directory`'s mode says: for the group too when the
    /// group may read, write and enter it (a cache a team shares, `chmod 2770`), else for the
    /// owner alone.
    func matchingAccess(of directory: CachePath) -> FileIO {
        let groupAll = S_IRGRP | S_IWGRP | S_IXGRP
        let shared = status(directory).map { $0.st_mode & groupAll == groupAll } ?? false
        return FileIO(system, sharedWithGroup: shared)
    }

    /// The real file system.
    static let posix = FileIO(PosixFileSystem())

    /// Opens `path` (close-on-exec). A file is never opened through a symbolic link
    /// (`O_NOFOLLOW`: ELOOP instead), so nothing planted in DIR leads outside it; a directory
    /// may be one (the cache directory itself may be reached through a link). Nor does the
    /// open wait (`O_NONBLOCK`, which regular files ignore): a FIFO planted under a cache name
    /// opens at once and reads as empty, instead of blocking the open, fsck or a checkpoint.
    func open(_ path: CachePath, _ mode: FileDescriptor.AccessMode,
              options: FileDescriptor.OpenOptions = [], permissions: FilePermissions? = nil) throws -> FileDescriptor {
        let options = options.contains(.directory) ? options : options.union(Self.fileOptions)
        let fd: FileDescriptor
        do {
            fd = try system.open(path, mode, options: options.union(.closeOnExec), permissions: permissions)
        } catch {
            throw BlobCacheError.io(operation: "open", path: path.string, errno: error)
        }
        // Shared with the group: group write too, whatever the umask (like git's shared repositories).
        if sharedWithGroup, options.contains(.create), let permissions {
            do { try system.setPermissions(fd, permissions) } catch {
                close(fd)
                // A file this call made (O_EXCL) goes with it; one that was there stays.
                if options.contains(.exclusiveCreate) { _ = try? remove(path) }
                throw BlobCacheError.io(operation: "fchmod", path: path.string, errno: error)
            }
        }
        return fd
    }

    /// What every open of a file adds: no symbolic link followed, no wait on a FIFO.
    private static let fileOptions: FileDescriptor.OpenOptions = [.noFollow, .nonBlocking]

    /// Creates a file that must not exist yet, for writing.
    func create(_ path: CachePath, _ mode: FileDescriptor.AccessMode = .writeOnly) throws -> FileDescriptor {
        try open(path, mode, options: [.create, .exclusiveCreate], permissions: filePermissions)
    }

    /// Opens a file (for reading unless told), never through a symbolic link nor waiting on a
    /// FIFO (as `open`); `nil` when it does not exist.
    func openIfExists(_ path: CachePath, _ mode: FileDescriptor.AccessMode = .readOnly) throws -> FileDescriptor? {
        do {
            return try system.open(path, mode, options: Self.fileOptions.union(.closeOnExec), permissions: nil)
        } catch .noSuchFileOrDirectory {
            return nil
        } catch {
            throw BlobCacheError.io(operation: "open", path: path.string, errno: error)
        }
    }

    /// Closes a descriptor.
    func close(_ fd: FileDescriptor) { system.close(fd) }

    /// Writes all of `bytes` at `offset`.
    func writeAll(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: CachePath) throws {
        var written = 0
        while written < bytes.count {
            do throws(Errno) {
                let n = try system.write(fd, UnsafeRawBufferPointer(rebasing: bytes[written...]), at: offset + Int64(written))
                guard n > 0 else { throw Errno.ioError }
                written += n
            } catch {
                throw BlobCacheError.io(operation: "write", path: path.string, errno: error)
            }
        }
    }

    /// Reads up to `count` bytes at `offset`; fewer only at end of file.
    func read(_ fd: FileDescriptor, count: Int, at offset: Int64, path: CachePath) throws -> [UInt8] {
        // An empty array made by `init(unsafeUninitializedCapacity:)` is the shared empty
        // storage, whose count that initializer writes: a race ThreadSanitizer reports.
        guard count > 0 else { return [] }
        var failure: (any Error)?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { storage, initialized in
            do { initialized = try readFully(fd, into: UnsafeMutableRawBufferPointer(storage), at: offset, path: path) } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// Fills `buffer` from `offset` on and returns how many bytes it read: all of them, or
    /// fewer only at end of file.
    func readFully(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64,
                   path: CachePath) throws -> Int {
        var filled = 0
        while filled < buffer.count {
            do throws(Errno) {
                let n = try system.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]),
                                        at: offset + Int64(filled))
                if n == 0 { break }
                filled += n
            } catch {
                throw BlobCacheError.io(operation: "read", path: path.string, errno: error)
            }
        }
        return filled
    }

    /// Reads a whole file; `nil` when it does not exist. Throws `EFBIG` instead of reading a
    /// file longer than `limit`. Files whose size nothing vouches for are mapped instead
    /// (`MappedFile`), so that a sparse file claiming terabytes allocates nothing.
    func readWholeFile(_ path: CachePath, atMost limit: Int64 = .max) throws -> [UInt8]? {
        guard let fd = try openIfExists(path) else { return nil }
        defer { close(fd) }
        let size = try fileSize(fd, path: path)
        guard size <= limit else { throw BlobCacheError.io(operation: "read", path: path.string, errno: .fileTooLarge) }
        return try read(fd, count: Int(size), at: 0, path: path)
    }

    /// The size of an open file.
    func fileSize(_ fd: FileDescriptor, path: CachePath) throws -> Int64 {
        do { return Int64(try system.status(fd).st_size) } catch {
            throw BlobCacheError.io(operation: "stat", path: path.string, errno: error)
        }
    }

    /// The size of an open file, or `nil` when it is not a regular file.
    func regularFileSize(of fd: FileDescriptor, path: CachePath) throws -> Int64? {
        do {
            let info = try system.status(fd)
            return info.st_mode & S_IFMT == S_IFREG ? Int64(info.st_size) : nil
        } catch {
            throw BlobCacheError.io(operation: "stat", path: path.string, errno: error)
        }
    }

    /// The status of `path` (a link is not followed), or `nil` when it cannot be had.
    func status(_ path: CachePath) -> stat? { try? system.status(path) }

    /// The status of an open file, `nil` when it cannot be had.
    func status(_ fd: FileDescriptor) -> stat? { try? system.status(fd) }

    /// Flushes a file's data and metadata to stable storage.
    func sync(_ fd: FileDescriptor, path: CachePath) throws {
        do { try system.sync(fd) } catch {
            throw BlobCacheError.io(operation: "fsync", path: path.string, errno: error)
        }
    }

    /// Flushes a directory's entries (new, renamed or removed names) to stable storage.
    func syncDirectory(_ path: CachePath) throws {
        let fd = try open(path, .readOnly, options: .directory)
        defer { close(fd) }
        try sync(fd, path: path)
    }

    /// Cuts a file to `length` bytes.
    func truncate(_ fd: FileDescriptor, to length: Int64, path: CachePath) throws {
        do { try system.truncate(fd, to: length) } catch {
            throw BlobCacheError.io(operation: "truncate", path: path.string, errno: error)
        }
    }

    /// Atomically replaces `destination` with `source`.
    func rename(_ source: CachePath, to destination: CachePath) throws {
        do { try system.rename(source, to: destination) } catch {
            throw BlobCacheError.io(operation: "rename", path: source.string + " -> " + destination.string, errno: error)
        }
    }

    /// Removes a file; a missing file is not an error. Returns whether it existed.
    @discardableResult
    func remove(_ path: CachePath) throws -> Bool {
        do {
            try system.unlink(path)
            return true
        } catch .noSuchFileOrDirectory {
            return false
        } catch {
            throw BlobCacheError.io(operation: "unlink", path: path.string, errno: error)
        }
    }

    /// Removes an empty directory; returns false when it is missing or not empty.
    @discardableResult
    func removeDirectory(_ path: CachePath) -> Bool {
        (try? system.removeDirectory(path)) != nil
    }

    /// Creates a directory; an existing directory is fine. Returns true when it was created.
    /// A directory another thread removes between this mkdir's EEXIST and the check that it
    /// is one is made again.
    @discardableResult
    func makeDirectory(_ path: CachePath) throws -> Bool {
        var failure = Errno.fileExists
        for _ in 0..<8 {
            do {
                try system.makeDirectory(path, permissions: directoryPermissions)
                if sharedWithGroup { try setPermissions(ofDirectory: path, directoryPermissions) }
                return true
            } catch .fileExists {
                switch try fileType(path) {
                case .directory: return false
                case nil: continue
                case .regular, .other: failure = .fileExists
                }
                break
            } catch {
                failure = error
                break
            }
        }
        throw BlobCacheError.io(operation: "mkdir", path: path.string, errno: failure)
    }

    /// Sets a directory's mode bits (through a descriptor of it, never through a link).
    func setPermissions(ofDirectory path: CachePath, _ permissions: FilePermissions) throws(Errno) {
        let fd = try system.open(path, .readOnly, options: [.directory, .noFollow, .closeOnExec], permissions: nil)
        defer { system.close(fd) }
        try system.setPermissions(fd, permissions)
    }

    /// The names in a directory (without `.` and `..`); empty when it does not exist. Any other
    /// failure throws: a listing that silently came back short would look like lost files.
    func listDirectory(_ path: CachePath) throws -> [String] {
        do { return try system.listDirectory(path) } catch .noSuchFileOrDirectory { return [] } catch {
            throw BlobCacheError.io(operation: "opendir", path: path.string, errno: error)
        }
    }

    /// What kind of file `path` names (a link is not followed); `nil` when nothing is there.
    func fileType(_ path: CachePath) throws -> FileType? {
        do {
            let mode = try system.status(path).st_mode & S_IFMT
            return mode == S_IFREG ? .regular : mode == S_IFDIR ? .directory : .other
        } catch .noSuchFileOrDirectory {
            return nil
        } catch {
            throw BlobCacheError.io(operation: "lstat", path: path.string, errno: error)
        }
    }

    /// The kinds of file `fileType` tells apart.
    enum FileType: Sendable { case regular, directory, other }

    /// Whether `path` names a directory (not a link to one).
    func isDirectory(_ path: CachePath) throws -> Bool { try fileType(path) == .directory }

    /// Whether a loose blob's two shard directories (`CacheFiles.shardDirectories(of:)`) are
    /// real directories (or absent), never links: checked before a blob is written, read or
    /// deleted below them, so a link planted in place of a shard directory is never followed
    /// out of DIR.
    func shardDirectoriesAreReal(_ shards: (upper: CachePath, lower: CachePath)) throws -> Bool {
        try shardDirectoriesExist(shards) != nil
    }

    /// Throws ELOOP, naming the lower one, unless `shardDirectoriesAreReal(shards)`: before a
    /// blob is written below them. Returns whether both exist.
    @discardableResult
    func requireRealShardDirectories(_ shards: (upper: CachePath, lower: CachePath)) throws -> Bool {
        guard let exist = try shardDirectoriesExist(shards) else {
            throw BlobCacheError.io(operation: "lstat", path: shards.lower.string, errno: .tooManySymbolicLinkLevels)
        }
        return exist
    }

    /// Whether both shard directories exist; `nil` when either is something else than a
    /// directory (a link, a file).
    private func shardDirectoriesExist(_ shards: (upper: CachePath, lower: CachePath)) throws -> Bool? {
        // The upper one first: a link there would make the lower one's lstat look outside.
        var exist = true
        for directory in [shards.upper, shards.lower] {
            switch try fileType(directory) {
            case .directory: continue
            case nil: exist = false
            case .regular, .other: return nil
            }
        }
        return exist
    }

    /// Creates a loose blob's two shard directories, upper first, where missing. With
    /// `durably`, their names are fsynced in their parents (whichever thread made them): a
    /// publish fsyncs only the lower one, and a blob whose directory a power cut forgot would
    /// be lost with it.
    func makeShardDirectories(_ shards: (upper: CachePath, lower: CachePath), durably: Bool) throws {
        for directory in [shards.upper, shards.lower] {
            try makeDirectory(directory)
            if durably { try syncDirectory(directory.removingLastComponent()) }
        }
    }

    /// Whether `path` names a regular file (not a link to one).
    func isRegularFile(_ path: CachePath) throws -> Bool { try fileType(path) == .regular }

    /// The size of the regular file `path` names (a link is not followed); `nil` when nothing,
    /// or something other than a regular file, is there.
    func regularFileSize(_ path: CachePath) throws -> Int64? {
        do {
            let info = try system.status(path)
            return info.st_mode & S_IFMT == S_IFREG ? Int64(info.st_size) : nil
        } catch .noSuchFileOrDirectory {
            return nil
        } catch {
            throw BlobCacheError.io(operation: "lstat", path: path.string, errno: error)
        }
    }

    /// Writes `bytes` to `path` atomically: a temporary file beside it, written whole (and
    /// fsynced, with the directory after the rename, when `durable`), renamed over `path`.
    /// A reader sees the old file or the new one, never a part. Every small file the cache
    /// replaces whole (journal rewrite, snapshot, counters, config) goes through here.
    func replaceAtomically(_ path: CachePath, with bytes: UnsafeRawBufferPointer, durable: Bool,
                           keepOpen: Bool = false) throws -> FileDescriptor? {
        let temporary = CacheFiles.temporary(for: path)
        _ = try remove(temporary)
        let fd = try open(temporary, keepOpen ? .readWrite : .writeOnly, options: [.create, .exclusiveCreate],
                          permissions: filePermissions)
        do {
            try writeAll(fd, bytes, at: 0, path: temporary)
            if durable { try sync(fd, path: temporary) }
            try rename(temporary, to: path)
            if durable { try syncDirectory(path.removingLastComponent()) }
        } catch {
            close(fd)
            _ = try? remove(temporary)
            throw error
        }
        if keepOpen { return fd }
        close(fd)
        return nil
    }

    /// Maps `length` bytes of a file read-only; see `FileSystem.map`.
    func map(_ fd: FileDescriptor, length: Int, shared: Bool, populate: Bool, path: CachePath) throws -> UnsafeMutableRawPointer {
        do { return try system.map(fd, length: length, shared: shared, populate: populate) } catch {
            throw BlobCacheError.io(operation: "mmap", path: path.string, errno: error)
        }
    }

    /// Files the cache creates: 0600, or 0660 when shared with the group (the umask aside).
    var filePermissions: FilePermissions { sharedWithGroup ? [.ownerReadWrite, .groupReadWrite] : [.ownerReadWrite] }
    /// Directories the cache creates: 0700, or 2770 when shared with the group (set-group-ID,
    /// so that what is made in them belongs to the directory's group).
    var directoryPermissions: FilePermissions {
        sharedWithGroup ? [.ownerReadWriteExecute, .groupReadWriteExecute, .setGroupID] : [.ownerReadWriteExecute]
    }
}
