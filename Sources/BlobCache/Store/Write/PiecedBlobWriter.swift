import Dispatch
import SystemPackage

/// Writes a value that arrives in pieces as a pieced loose blob (format version 4) into a
/// staging file, a piece at a time: each piece is hashed into the blob id on the caller's
/// thread while a serial queue compresses it, checksums it (seals it, under a key) and writes
/// it, so reading the next piece, hashing and encoding overlap on two cores. At most two pieces
/// are in flight. The header, which needs the id and the totals, is written last, at the start
/// of the file.
///
///     let writer = try PiecedBlobWriter(pipeline: pipeline)
///     try writer.append(firstMegabyte)
///     let (info, staged) = try writer.finish()
final class PiecedBlobWriter: @unchecked Sendable {
    let pipeline: BlobPipeline
    let file: StagingFile
    private let salt: UInt64
    private var hash: RunningBlobHash
    private(set) var rawLength = 0
    private(set) var pieceCount = 0
    /// A piece shorter than the piece size ends the value: nothing may follow it.
    private var ended = false
    /// What the queue has written: the file's end, whether a piece was compressed, the first
    /// failure (which ends the set).
    private let written: Locked<(offset: Int64, anyPieceCompressed: Bool, failure: (any Error)?)>
    private let queue = DispatchQueue(label: "BlobCache.PiecedBlobWriter")
    /// Pieces handed to the queue and not yet written, at most two.
    private let slots = DispatchSemaphore(value: 2)

    /// Creates the staging file (in a shard directory picked at random, or `objects/`).
    init(pipeline: BlobPipeline) throws {
        self.pipeline = pipeline
        if let file = pipeline.makeStagingFile() {
            self.file = file
        } else {
            // The random shard's create failed (or none exists): `objects/` itself, with its error.
            let path = pipeline.files.stagingPath(in: pipeline.files.objects)
            self.file = StagingFile(path: path, descriptor: try pipeline.io.create(path))
        }
        salt = .random(in: 0 ... .max)
        hash = RunningBlobHash(pipeline.hasher)
        written = Locked((Int64(PiecedBlobFormat.firstPieceOffset), false, nil))
    }

    /// Stored bytes written so far (the file's size once finished, header included); a piece
    /// still being encoded is not counted yet.
    var storedBytes: Int { Int(written.withLock { $0.offset }) }

    /// Hashes the next piece here and hands it to the queue to encode and write: the piece
    /// size, or fewer bytes for the last one. Throws the failure of an earlier piece's write.
    func append(_ piece: [UInt8]) throws {
        precondition(!ended && !piece.isEmpty && piece.count <= PiecedBlobFormat.pieceSize, "pieces are full but the last")
        try throwFailure()
        slots.wait()
        let encoder = PieceEncoder(pipeline: pipeline, salt: salt, index: pieceCount)
        queue.async { [self] in
            defer { slots.signal() }
            guard written.withLock({ $0.failure == nil }) else { return }
            let (image, codec) = piece.withUnsafeBytes { encoder.encode($0) }
            do {
                let offset = written.withLock { $0.offset }
                try image.withUnsafeBytes { try pipeline.io.writeAll(file.descriptor, $0, at: offset, path: file.path) }
                written.withLock {
                    $0.offset += Int64(image.count)
                    if codec != .none { $0.anyPieceCompressed = true }
                }
            } catch {
                written.withLock { $0.failure = error }
            }
        }
        piece.withUnsafeBytes { hash.update($0) }
        rawLength += piece.count
        pieceCount += 1
        if piece.count < PiecedBlobFormat.pieceSize { ended = true }
    }

    private func throwFailure() throws {
        if let failure = written.withLock({ $0.failure }) { throw failure }
    }

    /// Waits for the pieces in flight.
    private func drain() { queue.sync {} }

    /// Closes and deletes the staging file: the value will not be published.
    func discard() {
        drain()
        pipeline.discard(file)
    }

    /// Waits for the pieces in flight, then writes the header, fsyncs when sets are
    /// synchronous, closes the file and names the blob; the caller publishes or discards the
    /// staged file (on a throw, `discard()`).
    func finish() throws -> (info: BlobInfo, staged: StagedLooseBlob) {
        drain()
        try throwFailure()
        let id = hash.finish()
        let (end, anyPieceCompressed, _) = written.withLock { $0 }
        let codec: CodecTag = anyPieceCompressed ? Self.codec(of: pipeline).tag : .none
        var head = BinaryWriter(capacity: LooseBlobFormat.checkedHeaderSize)
        head.append(LooseBlobFormat.magic)
        head.append(PiecedBlobFormat.version)
        head.append(codec.rawValue)
        head.append(pipeline.cipher == nil ? 0 : LooseBlobFormat.sealedFlag)
        head.append(UInt8(0))
        head.append(UInt64(rawLength))
        head.append(UInt64(end - Int64(LooseBlobFormat.headerSize)))
        let unbound = PiecedBlobFormat.Prologue(pieceSize: PiecedBlobFormat.pieceSize, pieceCount: pieceCount, salt: salt, binding: 0)
        let binding = pipeline.cipher?.binding(of: id, fields: head.bytes + unbound.bytes.prefix(16)) ?? 0
        let prologue = PiecedBlobFormat.Prologue(pieceSize: PiecedBlobFormat.pieceSize, pieceCount: pieceCount, salt: salt,
                                                 binding: binding).bytes
        let checksum = head.bytes.withUnsafeBytes { h in
            prologue.withUnsafeBytes { PiecedBlobFormat.headerChecksum(head: h, prologue: $0) }
        }
        var image = head.bytes
        withUnsafeBytes(of: checksum.littleEndian) { image += $0 }
        image += prologue
        let shards = pipeline.files.shardDirectories(of: id)
        if try !pipeline.io.requireRealShardDirectories(shards) {
            do {
                try pipeline.io.makeShardDirectories(shards, durably: pipeline.synchronous)
            } catch BlobCacheError.io(_, _, .noSuchFileOrDirectory) {}
        }
        try image.withUnsafeBytes { try pipeline.io.writeAll(file.descriptor, $0, at: 0, path: file.path) }
        if pipeline.synchronous { try pipeline.io.sync(file.descriptor, path: file.path) }
        pipeline.io.close(file.descriptor)
        let info = BlobInfo(id: id, codec: codec, rawLength: rawLength, payloadLength: Int(end) - LooseBlobFormat.headerSize,
                            place: .loose)
        return (info, StagedLooseBlob(temporary: file.path, final: pipeline.files.loosePath(of: id)))
    }

    /// The codec pieces are compressed with: the policy's for a value longer than a piece,
    /// which every pieced value is.
    static func codec(of pipeline: BlobPipeline) -> Codec {
        pipeline.compression.codec(forValueOf: PiecedBlobFormat.pieceSize + 1)
    }
}

/// Encodes one piece: compressed when that pays, sealed under a key, checksummed, behind its
/// header.
private struct PieceEncoder {
    let pipeline: BlobPipeline
    let salt: UInt64
    let index: Int

    /// The piece's header and payload as stored, and the codec its payload has.
    func encode(_ piece: UnsafeRawBufferPointer) -> (image: [UInt8], codec: CodecTag) {
        let headroom = PiecedBlobFormat.pieceHeaderSize
        // The policy's codec for the value as long as it is so far: from `storingRawFrom` on,
        // the pieces are stored raw (the value's final size is not known yet).
        let sizeSoFar = max(index * PiecedBlobFormat.pieceSize + piece.count, PiecedBlobFormat.pieceSize + 1)
        var encoded = Compression.compress(piece, codec: pipeline.compression.codec(forValueOf: sizeSoFar), headroom: headroom)
        let minimumSaving = pipeline.compression.minimumSaving(forValueOf: sizeSoFar)
        if let compressed = encoded, !Compression.pays(compressed.payloadCount, of: piece.count, minimumSaving: minimumSaving) {
            encoded = nil
        }
        var buffer: [UInt8]
        let tag: CodecTag
        if let encoded {
            buffer = encoded.buffer
            tag = encoded.tag
        } else {
            buffer = [UInt8](repeating: 0, count: headroom)
            buffer.reserveCapacity(headroom + piece.count + CacheCipher.overhead)
            buffer.append(contentsOf: piece)
            tag = .none
        }
        var storedLength = buffer.count - headroom
        if let cipher = pipeline.cipher {
            storedLength += CacheCipher.overhead
            let fields = PiecedBlobFormat.PieceHeader(storedLength: storedLength, rawLength: piece.count, index: index,
                                                      codec: tag, checksum: 0)
            buffer = buffer.withUnsafeBytes {
                cipher.seal(UnsafeRawBufferPointer(rebasing: $0[headroom...]),
                            context: .piece(salt: salt, header: fields.checkedBytes), headroom: headroom)
            }
        }
        let unchecked = PiecedBlobFormat.PieceHeader(storedLength: storedLength, rawLength: piece.count, index: index,
                                                     codec: tag, checksum: 0)
        let checksum = buffer.withUnsafeBytes {
            unchecked.computedChecksum(of: UnsafeRawBufferPointer(rebasing: $0[headroom...]), salt: salt)
        }
        let header = PiecedBlobFormat.PieceHeader(storedLength: storedLength, rawLength: piece.count, index: index,
                                                  codec: tag, checksum: checksum)
        buffer.replaceSubrange(0..<headroom, with: header.bytes)
        return (buffer, tag)
    }
}
