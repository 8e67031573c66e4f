import SystemPackage

extension BlobPipeline {
    /// Hashes and encodes `value` as the policy says; a large one is hashed on one core while
    /// the others compress.
    func prepare(_ value: UnsafeRawBufferPointer) -> PreparedBlob {
        PreparedBlob.hashingAndEncoding(value, codec: compression.codec(forValueOf: value.count),
                                        minimumSaving: compression.minimumSaving(forValueOf: value.count),
                                        packThreshold: packThreshold, cipher: cipher)
    }

    /// Encodes `value`, whose id is already known, as the policy says (with `codec` instead of
    /// the policy's when given).
    func prepare(_ value: UnsafeRawBufferPointer, id: BlobID, codec: Codec? = nil) -> PreparedBlob {
        PreparedBlob.encoding(value, id: id, codec: codec ?? compression.codec(forValueOf: value.count),
                              minimumSaving: compression.minimumSaving(forValueOf: value.count),
                              packThreshold: packThreshold, cipher: cipher)
    }

    /// Writes a loose blob under a temporary name in its shard directory (fsynced when
    /// synchronous). Shard directories are made when missing; since the engine removes empty
    /// ones as it deletes blobs, one can vanish between its mkdir and the create: then again.
    func stage(_ blob: PreparedBlob) throws -> StagedLooseBlob {
        let final = files.loosePath(of: blob.id)
        let shards = files.shardDirectories(of: blob.id)
        let temporary = files.stagingPath(in: shards.lower)
        try io.requireRealShardDirectories(shards)
        var fd: FileDescriptor?
        for attempt in 1...Self.stagingAttempts where fd == nil {
            do {
                fd = try io.create(temporary)
            } catch BlobCacheError.io(_, _, .noSuchFileOrDirectory) where attempt < Self.stagingAttempts {
                do { try io.makeShardDirectories(shards, durably: synchronous) } catch BlobCacheError.io(_, _, .noSuchFileOrDirectory) {}
            }
        }
        guard let fd else { throw BlobCacheError.io(operation: "create", path: temporary.string, errno: .noSuchFileOrDirectory) }
        do {
            try blob.withImage { try io.writeAll(fd, $0, at: 0, path: temporary) }
            if synchronous { try io.sync(fd, path: temporary) }
            io.close(fd)
        } catch {
            io.close(fd)
            _ = try? io.remove(temporary)
            throw error
        }
        return StagedLooseBlob(temporary: temporary, final: final)
    }

    /// How often a stage tries to create its file before giving up on a shard directory that
    /// keeps vanishing (each loss means another thread just deleted that shard's last blob).
    static let stagingAttempts = 16

    /// Deletes a staged file that will not be published (best effort: a left-over one is
    /// swept by compact and fsck --repair).
    func discard(_ staged: StagedLooseBlob?) {
        if let staged { _ = try? io.remove(staged.temporary) }
    }
}
