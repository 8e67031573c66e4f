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
}
