import SystemPackage

/// A file made for a large loose blob before its id is known: under a staging name in a shard
/// directory picked at random (or `objects/` itself), open for writing. After hashing,
/// creating a file (an inode allocation) is the costliest step of a large set, so a set makes
/// it on one core while another hashes, and the publish renames it into the blob's own shard.
struct StagingFile: Sendable {
    let path: CachePath
    let descriptor: FileDescriptor
}

extension BlobPipeline {
    /// Hashes and encodes a large `value` as `prepare(_:)` does and meanwhile, on another core,
    /// creates the file it will be staged in. No file when sets are synchronous (a rename
    /// between two directories would need both fsynced) or when the create fails: `stage`
    /// then makes one in the shard, as for any other blob.
    ///
    ///     let (blob, file) = pipeline.prepareWithStagingFile(bytes)
    ///     let staged = try pipeline.stage(blob, in: file)
    func prepareWithStagingFile(_ value: UnsafeRawBufferPointer) -> (blob: PreparedBlob, file: StagingFile?) {
        guard !synchronous else { return (prepare(value), nil) }
        var file: StagingFile?
        let blob = PreparedBlob.hashingAndEncoding(value, codec: compression.codec(forValueOf: value.count),
                                                   minimumSaving: compression.minimumSaving(forValueOf: value.count),
                                                   packThreshold: packThreshold, cipher: cipher,
                                                   alongside: { file = makeStagingFile() })
        return (blob, file)
    }

    /// Writes `blob` into `file` (made by `prepareWithStagingFile`) and closes it, making the
    /// blob's shard directories when they are missing (the publish makes them again should a
    /// deletion remove them meanwhile: staged elsewhere, no file in them keeps them). The file is deleted
    /// when this throws.
    func stage(_ blob: PreparedBlob, in file: StagingFile) throws -> StagedLooseBlob {
        let shards = files.shardDirectories(of: blob.id)
        do {
            if try !io.requireRealShardDirectories(shards) {
                do { try io.makeShardDirectories(shards, durably: synchronous) } catch BlobCacheError.io(_, _, .noSuchFileOrDirectory) {}
            }
            try blob.withImage { try io.writeAll(file.descriptor, $0, at: 0, path: file.path) }
            if synchronous { try io.sync(file.descriptor, path: file.path) }
        } catch {
            discard(file)
            throw error
        }
        io.close(file.descriptor)
        return StagedLooseBlob(temporary: file.path, final: files.loosePath(of: blob.id))
    }

    /// Closes and deletes a staging file that no blob will be published from.
    func discard(_ file: StagingFile?) {
        guard let file else { return }
        io.close(file.descriptor)
        _ = try? io.remove(file.path)
    }

    /// Creates the file in a shard directory picked at random when that one exists (as most
    /// do in a cache of many blobs), else in `objects/`. Spread over the shards, these files'
    /// inodes spread over the file system's inode groups as the blobs' own do; all in one
    /// directory, each create searches one group, past every inode deleted there lately (ext4's
    /// `recently_deleted`), which slowed large puts that came after many small ones.
    func makeStagingFile() -> StagingFile? {
        let shards = files.shardDirectories(of: BlobID(high: .random(in: 0 ... .max), low: 0))
        // Both looked at, always: the same calls whichever directory it picks.
        let upper = try? io.fileType(shards.upper), lower = try? io.fileType(shards.lower)
        let path = files.stagingPath(in: upper == .directory && lower == .directory ? shards.lower : files.objects)
        guard let descriptor = try? io.create(path) else { return nil }
        return StagingFile(path: path, descriptor: descriptor)
    }
}
