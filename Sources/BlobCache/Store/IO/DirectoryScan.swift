import SystemPackage

/// Everything under `objects/` and `packs/`, classified: what compact, fsck and recovery walk.
struct DirectoryScan {
    /// A loose blob file at its right place (named by an id, in that id's shard).
    var looseBlobs: [(id: BlobID, path: CachePath)] = []
    /// Writers' temporary files.
    var temporaryFiles: [CachePath] = []
    /// Files or directories that are neither blobs in their right shard nor temporary files.
    var unknownFiles: [CachePath] = []
    /// Things named like a blob, a segment or a shard directory that are not what the name says
    /// (a symbolic link, a directory for a file, a file for a directory) or are larger than
    /// any segment the cache writes: never followed or read.
    var irregularFiles: [CachePath] = []
    /// Shard directories with nothing in them.
    var emptyShardDirectories: [CachePath] = []
    /// Segment files, by number.
    var segments: [(number: UInt32, path: CachePath)] = []

    init(files: CacheFiles, io: FileIO) throws {
        let objects = files.objects, packs = files.packs
        // A link (or anything but a directory) in place of `objects/` or `packs/` is reported,
        // never listed: what it leads to is not the cache's.
        var scanned: [CachePath] = []
        for directory in [objects, packs] {
            if let type = try io.fileType(directory), type != .directory {
                irregularFiles.append(directory)
            } else {
                scanned.append(directory)
            }
        }
        for shard in try (scanned.contains(objects) ? io.listDirectory(objects) : []).sorted() {
            let shardPath = objects.appending(shard)
            if CacheFiles.isStagingName(shard), try io.isRegularFile(shardPath) {
                temporaryFiles.append(shardPath)   // a large set's, made before its id was known
                continue
            }
            guard CacheFiles.isShardName(shard), try io.isDirectory(shardPath) else {
                if CacheFiles.isShardName(shard) { irregularFiles.append(shardPath) } else { unknownFiles.append(shardPath) }
                continue
            }
            let leaves = try io.listDirectory(shardPath).sorted()
            if leaves.isEmpty { emptyShardDirectories.append(shardPath) }
            for leaf in leaves {
                let leafPath = shardPath.appending(leaf)
                guard CacheFiles.isShardName(leaf), try io.isDirectory(leafPath) else {
                    if CacheFiles.isShardName(leaf) { irregularFiles.append(leafPath) } else { unknownFiles.append(leafPath) }
                    continue
                }
                let names = try io.listDirectory(leafPath).sorted()
                if names.isEmpty { emptyShardDirectories.append(leafPath) }
                for name in names {
                    let path = leafPath.appending(name)
                    if CacheFiles.isStagingName(name), try io.isRegularFile(path) {
                        temporaryFiles.append(path)
                    } else if let id = BlobID(hex: name), id.hex == name, name.hasPrefix(shard + leaf) {
                        if try io.isRegularFile(path) { looseBlobs.append((id, path)) } else { irregularFiles.append(path) }
                    } else {
                        unknownFiles.append(path)
                    }
                }
            }
        }
        for name in try (scanned.contains(packs) ? io.listDirectory(packs) : []).sorted() {
            let path = packs.appending(name)
            if let number = PackFormat.segmentNumber(fromFileName: name) {
                if let size = try io.regularFileSize(path), size <= PackFormat.maxSegmentSize {
                    segments.append((number, path))
                } else {
                    irregularFiles.append(path)
                }
            } else if CacheFiles.isStagingName(name), try io.isRegularFile(path) {
                temporaryFiles.append(path)
            } else {
                unknownFiles.append(path)
            }
        }
    }
}
