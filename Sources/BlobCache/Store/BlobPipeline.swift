import SystemPackage

/// The work on blobs that runs outside the engine's lock: hash, encode and stage a value being
/// set; read, check and decode one being got. A value holding what that work needs (the
/// directory's names, the file system, codec, pack threshold, durability), shared by every
/// thread of a `BlobCache`.
///
///     let blob = pipeline.prepare(bytes)
///     let staged = blob.packed ? nil : try pipeline.stage(blob)
struct BlobPipeline: Sendable {
    let files: CacheFiles
    let io: FileIO
    /// The codec of each new value, by its size.
    let compression: CompressionPolicy
    /// Blobs whose stored size is below this go into packs; 0 packs nothing.
    let packThreshold: Int
    let durability: Durability
    /// Seals new blobs and opens stored ones; `nil` in a cache without encryption.
    let cipher: CacheCipher?

    /// How blob ids are computed: MD5, or keyed under encryption.
    var hasher: BlobHasher { BlobHasher(cipher) }

    /// Whether every write is fsynced before the operation returns.
    var synchronous: Bool { durability == .powerLossSafe }

    /// Hashes and encodes `value`; a large one is hashed on one core while the others compress.
    func prepare(_ value: UnsafeRawBufferPointer) -> PreparedBlob {
        PreparedBlob.hashingAndEncoding(value, codec: compression.codec(forValueOf: value.count), packThreshold: packThreshold,
                                        cipher: cipher)
    }

    /// Encodes `value`, whose id is already known.
    func prepare(_ value: UnsafeRawBufferPointer, id: BlobID, codec: Codec? = nil) -> PreparedBlob {
        PreparedBlob.encoding(value, id: id, codec: codec ?? compression.codec(forValueOf: value.count),
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

    /// Reads and checks a blob as `check` says (a read trusts a sealed blob's tag; repair
    /// checks everything fsck does); `.failure` says how it is damaged (or missing).
    func read(_ info: BlobInfo, at location: BlobStore.Location?,
              checking check: PayloadCheck = .tagWhenSealed) throws -> Result<[UInt8], BlobDamage> {
        switch location {
        case nil:
            return .failure(.missing("its pack segment is gone"))
        case .loose(let path):
            guard try io.shardDirectoriesAreReal(files.shardDirectories(of: info.id)) else {
                return .failure(.missing("a shard directory above it is a symbolic link"))
            }
            guard let fd = try io.openIfExists(path) else { return .failure(.missing("file is missing")) }
            defer { io.close(fd) }
            let size = try io.fileSize(fd, path: path)
            guard size <= LooseBlobFormat.largestFile(holding: info) else {
                return .failure(.sizeMismatch("file is larger than a blob of \(info.rawLength) bytes can be"))
            }
            // A large value stored raw goes straight into the value, checked as it arrives. (Only
            // tried when the index says raw: a compressed blob would pay a header read for nothing;
            // one recompressed since the index heard of it is read whole, and checked all the same.)
            if cipher == nil, info.codec == .none, size >= Int64(LooseBlobFormat.headerSize + Parallel.threshold),
               let checked = try LooseBlobFormat.readRaw(fd, fileSize: size, expecting: info, io: io, path: path) {
                return checked
            }
            // The file's copy is this read's own: a seal is opened in place, with no second buffer.
            var file = try io.read(fd, count: Int(size), at: 0, path: path)
            return file.withUnsafeMutableBytes {
                LooseBlobFormat.decode(file: .owned($0), expecting: info, cipher: cipher, checking: check)
            }
        case .packed(let segment, let offset, let writtenEnd):
            return try segment.readValue(at: offset, expecting: info, writtenEnd: writtenEnd, cipher: cipher, checking: check)
        }
    }
}
