import SystemPackage

extension BlobCache {
    /// Opens an existing cache to its owner's group, or closes it again: the cache directory and
    /// its subdirectories become 2770 (0700), its files 0660 (0600). Later opens follow the
    /// directory's mode, so files made afterwards are the group's too. A team sharing a cache
    /// needs a common group on the directory (`chgrp`); set-group-ID passes it to new files.
    /// Only the cache's own files and directories are changed, never through a link; the cache
    /// must not be open elsewhere (`inUse`).
    ///
    ///     try BlobCache.shareWithGroup(true, in: "/srv/cache/builds")
    public static func shareWithGroup(_ shared: Bool, in directory: String) throws {
        let files = CacheFiles(root: CachePath(normalizing: directory))
        let io = FileIO(PosixFileSystem(), sharedWithGroup: shared)
        let lock = try DirectoryLock.open(files, io: io, timeout: .zero)
        defer { lock.close() }
        try lock.withExclusive {
            guard lock.isAlone else { throw BlobCacheError.inUse(path: directory, pid: nil) }
            try changePermissions(files, io: io)
        }
    }

    private static func changePermissions(_ files: CacheFiles, io: FileIO) throws {
        let scan = try DirectoryScan(files: files, io: io)
        var directories: Set<CachePath> = [files.root, files.objects, files.packs]
        for (_, path) in scan.looseBlobs {
            let leaf = path.removingLastComponent()
            directories.formUnion([leaf, leaf.removingLastComponent()])
        }
        for path in scan.emptyShardDirectories { directories.insert(path) }
        for path in directories.sorted(by: { $0.string < $1.string }) where try io.isDirectory(path) {
            do { try io.setPermissions(ofDirectory: path, io.directoryPermissions) } catch {
                throw BlobCacheError.io(operation: "fchmod", path: path.string, errno: error)
            }
        }
        let regular = try files.ownFiles.filter { try io.isRegularFile($0) }
        for path in regular + scan.looseBlobs.map(\.path) + scan.segments.map(\.path) + scan.temporaryFiles {
            guard let fd = try io.openIfExists(path) else { continue }
            defer { io.close(fd) }
            do { try io.system.setPermissions(fd, io.filePermissions) } catch {
                throw BlobCacheError.io(operation: "fchmod", path: path.string, errno: error)
            }
        }
    }
}
