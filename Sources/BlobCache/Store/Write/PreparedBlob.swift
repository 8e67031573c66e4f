import SystemPackage

/// A blob hashed and encoded, with its on-disk image (header included) ready to write.
struct PreparedBlob: Sendable {
    let id: BlobID
    let rawLength: Int
    let codec: CodecTag
    let payloadLength: Int
    /// The encoder's buffer: from `imageStart` on, header + payload exactly as the file or pack
    /// record holds it (a loose header is shorter than the headroom left for a record's, and
    /// the bytes before it are skipped rather than moved).
    let buffer: [UInt8]
    let imageStart: Int
    let packed: Bool

    /// Bytes on disk: the record or the file.
    var imageCount: Int { buffer.count - imageStart }

    /// Where the blob goes once stored (a packed blob's segment and offset are the store's to pick).
    var info: BlobInfo {
        BlobInfo(id: id, codec: codec, rawLength: rawLength, payloadLength: payloadLength,
                 place: packed ? .packed(segment: 0, offset: 0) : .loose)
    }

    /// Calls `body` with the on-disk image.
    func withImage<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[imageStart...])) }
    }

    /// Encodes `value` (whose id is `id`) and builds its image: packed when the stored size is
    /// below `packThreshold`; raw unless `codec` saves `minimumSaving` of it.
    ///
    /// With `cipher`, the payload is sealed after compression.
    ///
    ///     let blob = PreparedBlob.encoding(bytes, id: BlobID(hashing: bytes), codec: .lz4, packThreshold: 65536, cipher: nil)
    static func encoding(_ value: UnsafeRawBufferPointer, id: BlobID, codec: Codec, minimumSaving: Double = 0,
                         packThreshold: Int, cipher: CacheCipher?) -> PreparedBlob {
        framing(encode(value, codec: codec, minimumSaving: minimumSaving), id: id, rawLength: value.count,
                packThreshold: packThreshold, cipher: cipher)
    }

    /// Hashes and encodes `value`: a large one is hashed on one core while the others compress
    /// it (the hashing core joins in after). `alongside` runs on another core than the hash
    /// where there is one and the value has more than one block to compress (else after it).
    static func hashingAndEncoding(_ value: UnsafeRawBufferPointer, codec: Codec, minimumSaving: Double = 0,
                                   packThreshold: Int, cipher: CacheCipher?,
                                   alongside: (() -> Void)? = nil) -> PreparedBlob {
        var id: BlobID?
        let hasher = BlobHasher(cipher)
        let encoded = encode(value, codec: codec, minimumSaving: minimumSaving, first: { id = hasher.id(of: value) },
                             alongside: alongside)
        return framing(encoded, id: id!, rawLength: value.count, packThreshold: packThreshold, cipher: cipher)
    }

    /// Compresses `value` with room for either header in front; `first` and `alongside` run
    /// beside it.
    private static func encode(_ value: UnsafeRawBufferPointer, codec: Codec, minimumSaving: Double,
                               first: (() -> Void)? = nil, alongside: (() -> Void)? = nil) -> Compression.Encoded {
        Compression.encode(value, codec: codec, headroom: PackFormat.recordHeaderSize, minimumSaving: minimumSaving,
                           first: first, alongside: alongside)
    }

    /// Places an encoded blob by its stored size and writes the matching header.
    /// With `cipher`, the payload is sealed first (bound to the id, codec and value length).
    private static func framing(_ encoded: Compression.Encoded, id: BlobID, rawLength: Int, packThreshold: Int,
                                cipher: CacheCipher?) -> PreparedBlob {
        var buffer = encoded.buffer
        var payloadCount = encoded.payloadCount
        if let cipher {
            let headroom = PackFormat.recordHeaderSize
            buffer = buffer.withUnsafeBytes {
                cipher.seal(UnsafeRawBufferPointer(rebasing: $0[headroom..<headroom + payloadCount]),
                            context: .blob(id: id, codec: encoded.tag, rawLength: rawLength), headroom: headroom)
            }
            payloadCount += CacheCipher.overhead
        }
        let packed = payloadCount + PackFormat.recordHeaderSize < packThreshold && payloadCount <= Int(UInt32.max)
        let imageStart: Int
        if packed {
            imageStart = 0
            PackFormat.writeRecordHeader(into: &buffer, id: id, codec: encoded.tag, rawLength: rawLength, sealed: cipher != nil)
        } else {
            imageStart = PackFormat.recordHeaderSize - LooseBlobFormat.headerSize
            LooseBlobFormat.writeHeader(into: &buffer, at: imageStart, codec: encoded.tag, rawLength: rawLength,
                                        sealed: cipher != nil)
        }
        return PreparedBlob(id: id, rawLength: rawLength, codec: encoded.tag, payloadLength: payloadCount,
                            buffer: buffer, imageStart: imageStart, packed: packed)
    }
}

/// A loose blob written under a temporary name, waiting to be published (or discarded).
struct StagedLooseBlob: Sendable {
    let temporary: CachePath
    let final: CachePath

    /// Whether it was staged outside its shard directory (a large value's, before its id was known).
    var isStagedOutsideItsShard: Bool { temporary.removingLastComponent() != final.removingLastComponent() }

    /// The shard directories of `final`, upper first.
    var shards: (upper: CachePath, lower: CachePath) {
        let lower = final.removingLastComponent()
        return (lower.removingLastComponent(), lower)
    }
}
