// Only the tests and the fuzz package call these (Package.swift defines BLOBCACHE_TESTING for
// them): release builds of the library leave them out.
#if BLOBCACHE_TESTING
import Crypto
import SystemPackage

/// The parsers of bytes that come from a cache directory or a command line, each runnable on
/// arbitrary input: what the libFuzzer targets (`Tests/Fuzz`, `Tools/fuzz.sh`) and the corpus
/// replay in the test suite call. A run must return whatever the bytes are: a trap, a hang or
/// an allocation beyond what the input justifies is a bug.
///
/// Checksums would stop a fuzzer at the first byte it changes, so most targets also have a
/// mode (chosen by the input's first byte) that seals the rest with valid checksums before
/// parsing: the fuzzer then reaches the decoders behind them, as a forger would.
///
///     FuzzTarget.journal.run(bytes)
enum FuzzTarget: String, CaseIterable, Sendable {
    case journal, packRecord, looseBlob, snapshot, config, stats, size

    /// Parses `input` the way this target's file or argument is parsed, with everything that
    /// uses the result afterwards.
    func run(_ input: UnsafeRawBufferPointer) {
        guard let mode = input.first else { return }
        let rest = UnsafeRawBufferPointer(rebasing: input[1...])
        switch self {
        case .journal: Self.journal(rest, sealed: mode & 1 == 1)
        case .packRecord: Self.packRecord(rest, mode: mode % 3)
        case .looseBlob: Self.looseBlob(rest, mode: mode % 4)
        case .snapshot: Self.snapshot(rest, sealed: mode & 1 == 1)
        case .config: _ = try? BlobCache.parseLimits(Array(input), path: CachePath("config"))
        case .stats: _ = BlobCache.Counters.parse(Array(input))
        case .size: _ = try? ByteSize.parse(String(decoding: input, as: UTF8.self))
        }
    }

    // MARK: Journal

    /// Replays a journal image into an index, then uses the index as an open would. Sealed:
    /// the input is a sequence of (length byte, kind, payload) records framed with valid CRCs.
    private static func journal(_ input: UnsafeRawBufferPointer, sealed: Bool) {
        var image: [UInt8]
        if sealed {
            let salt: UInt64 = 0x5EED
            image = JournalFormat.encodeHeader(.init(salt: salt, created: 0))
            var writer = BinaryWriter(capacity: input.count + 64)
            var offset = 0
            while offset + 2 <= input.count {
                let length = Int(input[offset]), kind = input[offset + 1]
                let payload = input[(offset + 2)..<min(input.count, offset + 2 + length)]
                offset += 2 + length
                JournalFormat.frame(kind: JournalRecord.Kind(rawValue: kind) ?? .set, seed: JournalFormat.seed(salt: salt),
                                    cipher: nil, into: &writer) { $0.append(bytes: payload) }
            }
            image += writer.bytes
        } else {
            image = Array(input)
        }
        image.withUnsafeBytes { bytes in
            guard case .success(let header) = JournalFormat.decodeHeader(bytes) else { return }
            // The open's batched replay must give what the record-at-a-time walk gives: once
            // checking every CRC itself, once taking them as another walk checked them (run
            // first, so that what is skipped does not depend on timing).
            let records = UnsafeRawBufferPointer(rebasing: bytes[JournalFormat.headerSize...])
            var walked = CacheIndex(seed: 1)
            let walk = JournalReader.walk(bytes, salt: header.salt, cipher: nil) { record, _ in walked.apply(record) }
            var index = CacheIndex(seed: 1)
            let replay = index.replay(records: records, at: JournalFormat.headerSize, salt: header.salt, cipher: nil, parallelFrom: .max)
            expectSameReplay(index, replay, walked, walk)
            let checked = CheckedFrames(start: JournalFormat.headerSize)
            checked.check(records, salt: header.salt)
            var trusting = CacheIndex(seed: 1)
            let trusted = trusting.applyFrames(records, at: JournalFormat.headerSize, salt: header.salt, checked: checked)
            expectSameReplay(trusting, trusted, walked, walk)
            exercise(&index)
            // The same records read as an encrypted journal's: every payload must fail to open.
            var sealedIndex = CacheIndex(seed: 1)
            _ = JournalReader.walk(bytes, salt: header.salt, cipher: fuzzCipher) { record, _ in sealedIndex.apply(record) }
        }
    }

    /// Traps unless a replay ended, counted and built the index as the walk did.
    private static func expectSameReplay(_ index: CacheIndex, _ replay: (end: JournalReader.End, records: Int),
                                         _ walked: CacheIndex, _ walk: (end: JournalReader.End, records: Int)) {
        precondition(replay.end == walk.end && replay.records == walk.records, "replay ended \(replay), the walk \(walk)")
        if let difference = index.firstDifference(from: walked) { preconditionFailure("replay and walk differ: \(difference)") }
        precondition([index.logicalBytes, index.storedBytes, index.entryLogicalBytes, index.pinnedStoredBytes, index.pinnedEntries,
                      index.livePackedBytes] == [walked.logicalBytes, walked.storedBytes, walked.entryLogicalBytes,
                                                 walked.pinnedStoredBytes, walked.pinnedEntries, walked.livePackedBytes]
                     && index.earliestExpiry == walked.earliestExpiry && index.namespaces.usage == walked.namespaces.usage,
                     "replay and walk differ in their totals")
    }

    /// A fixed key for the targets' encrypted reads.
    private static let fuzzCipher = try! CacheCipher(.aesGCM(key: SymmetricKey(data: [UInt8](repeating: 7, count: 32))))

    /// What an open and later operations do with a replayed or restored index: totals, LRU
    /// order, per-segment accounting, eviction of everything.
    private static func exercise(_ index: inout CacheIndex) {
        _ = index.journalOrder()
        index.forEachBlob { blob in _ = index.liveBytes(inSegment: blob.segment) }
        for (key, slot) in index.keyedSlots.prefix(64) {
            _ = index.slot(of: key)
            index.touch(slot: slot, at: 0, journaled: false)
        }
        _ = index.removeAll(includingPinned: true)
    }

    // MARK: Blobs

    /// A value's claimed lengths, from the input's first bytes (for sealed modes).
    private static func claimedRawLength(_ input: UnsafeRawBufferPointer) -> (raw: Int, codec: CodecTag, payload: UnsafeRawBufferPointer)? {
        guard input.count >= 9 else { return nil }
        let raw = Int(input.loadUnaligned(fromByteOffset: 0, as: UInt64.self) & ((1 << 40) - 1))
        let codec = CodecTag(rawValue: input[8] % 3)!
        return (raw, codec, UnsafeRawBufferPointer(rebasing: input[9...]))
    }

    /// Mode 0: a segment image as adoption scans it (no index record). Mode 1: one record
    /// checked against an index record built from its own header. Mode 2: a payload sealed
    /// into a record with a valid checksum and a claimed value length, then decoded; and the
    /// same payload AES-GCM sealed, then opened and decoded as a get does.
    private static func packRecord(_ input: UnsafeRawBufferPointer, mode: UInt8) {
        switch mode {
        case 0:
            _ = PackFormat.checkSegmentHeader(input, number: 1)
            _ = PackScanner.scan(input, cipher: nil) { _, _, _ in }
            _ = PackScanner.scan(input, cipher: fuzzCipher) { _, _, _ in }
        case 1:
            guard case .success(let header) = PackFormat.parseRecordHeader(input) else { return }
            let info = BlobInfo(id: header.id, codec: header.codec, rawLength: header.rawLength,
                                payloadLength: header.payloadLength, place: .packed(segment: 1, offset: 16))
            _ = PackFormat.decode(record: input, expecting: info, cipher: nil)
            _ = PackFormat.decode(record: input, expecting: info, cipher: fuzzCipher)
            _ = PackFormat.decode(record: input, expecting: info, cipher: fuzzCipher, checking: .tagWhenSealed)   // as a get
        default:
            guard let (raw, codec, payload) = claimedRawLength(input) else { return }
            var record = [UInt8](repeating: 0, count: PackFormat.recordHeaderSize) + Array(payload)
            let id = BlobID(hashing: Array(payload))
            PackFormat.writeRecordHeader(into: &record, id: id, codec: codec, rawLength: raw, sealed: false)
            record.withUnsafeBytes { bytes in
                _ = PackFormat.decode(record: bytes, expecting: nil, cipher: nil)
                _ = PackFormat.decode(record: bytes, expecting: BlobInfo(id: id, codec: codec, rawLength: raw,
                                                                       payloadLength: payload.count, place: .packed(segment: 1, offset: 16)),
                                      cipher: nil)
            }
            // The payload sealed under the claimed context, so that it is authentic: what follows
            // the tag check (decoding in the value's array or in place, opening while decoding)
            // meets every frame the fuzzer makes.
            let context = CacheCipher.Context.blob(id: id, codec: codec, rawLength: raw)
            var sealed = fuzzCipher.seal(payload, context: context)
            _ = sealed.withUnsafeBytes {
                SealedPayload.decode(.borrowed($0), sealed: true, cipher: fuzzCipher, id: id, codec: codec, rawLength: raw)
            }
            _ = sealed.withUnsafeMutableBytes {
                SealedPayload.decode(.owned($0), sealed: true, cipher: fuzzCipher, id: id, codec: codec, rawLength: raw)
            }
        }
    }

    /// Mode 0: a loose file with no index record (fsck, adoption). Mode 1: with an index
    /// record claiming lengths from its own header, also read as a get reads it (in place).
    /// Mode 2: a payload sealed into a file with a valid checksum and a claimed value length,
    /// decoded both ways. Mode 3: a pieced blob with its checksums forged.
    private static func looseBlob(_ input: UnsafeRawBufferPointer, mode: UInt8) {
        switch mode {
        case 0:
            _ = LooseBlobFormat.decode(file: input, expecting: nil, cipher: nil)
            _ = LooseBlobFormat.decode(file: input, expecting: nil, id: BlobID(hashing: []), cipher: fuzzCipher)
        case 1:
            guard case .success(let header) = LooseBlobFormat.parseHeader(input) else { return }
            let info = BlobInfo(id: BlobID(hashing: []), codec: header.codec, rawLength: header.rawLength,
                                payloadLength: header.payloadLength, place: .loose)
            _ = LooseBlobFormat.decode(file: input, expecting: info, cipher: nil)
            // As a get reads it: its own copy, the tag alone checked, the seal opened in place.
            var own = Array(input)
            _ = own.withUnsafeMutableBytes {
                LooseBlobFormat.decode(file: .owned($0), expecting: info, cipher: fuzzCipher, checking: .tagWhenSealed)
            }
        case 3:
            // A pieced blob (format 4) whose header and piece checksums are recomputed over the
            // input (a forgery): only the bounds and consistency checks stand between the bytes
            // and a value.
            var file = Array(input)
            guard PiecedBlobFormat.forgeChecksums(&file) else { return }
            file.withUnsafeBytes { bytes in
                _ = LooseBlobFormat.decode(file: bytes, expecting: nil, cipher: nil)
                guard case .success(let header) = LooseBlobFormat.parseHeader(bytes) else { return }
                let info = BlobInfo(id: BlobID(hashing: []), codec: header.codec, rawLength: header.rawLength,
                                    payloadLength: header.payloadLength, place: .loose)
                _ = LooseBlobFormat.decode(file: bytes, expecting: info, cipher: nil)
            }
        default:
            guard let (raw, codec, payload) = claimedRawLength(input) else { return }
            var file = [UInt8](repeating: 0, count: LooseBlobFormat.headerSize) + Array(payload)
            LooseBlobFormat.writeHeader(into: &file, at: 0, codec: codec, rawLength: raw, sealed: false)
            file.withUnsafeBytes { bytes in
                _ = LooseBlobFormat.decode(file: bytes, expecting: nil, cipher: nil)
                _ = LooseBlobFormat.decode(file: bytes, expecting: BlobInfo(id: BlobID(hashing: []), codec: codec, rawLength: raw,
                                                                          payloadLength: payload.count, place: .loose),
                                           cipher: nil)
            }
        }
    }

    // MARK: Snapshot

    /// A snapshot image looked up in before a restore, restored as an open restores it, then
    /// used. Sealed: the chunk digests, their hash and the header CRC are recomputed over the
    /// input first (a forgery), so the bounds and consistency checks alone stand between the
    /// bytes and the index.
    private static func snapshot(_ input: UnsafeRawBufferPointer, sealed: Bool) {
        var image = Array(input)
        if sealed { guard IndexSnapshot.reseal(&image) else { return } }
        guard case .success(let header) = image.withUnsafeBytes({ IndexSnapshot.parseHeader($0) }),
              let file = image.withUnsafeBytes({ MappedFile(copying: $0) }) else { return }
        if var lookup = SnapshotLookup(file: file, header: header) {
            // Keys that may be there: pieces of the key section, and two that likely are not.
            let keys = file.bytes[header.keysOffset..<min(header.keysOffset + header.keyBytes, header.digestsOffset)]
            for length in [0, 1, 3, 8, 40] where length <= keys.count {
                _ = lookup.find(UnsafeRawBufferPointer(rebasing: keys.prefix(length)))
            }
            _ = Array("key".utf8).withUnsafeBytes { lookup.find($0) }
        }
        guard var index = IndexSnapshot.restore(file, header: header) else { return }
        exercise(&index)
    }
}

extension PiecedBlobFormat {
    /// Recomputes a pieced blob's header checksum and every piece's checksum that its own
    /// lengths let it reach, as a forger would; `false` when `file` is not a pieced blob.
    static func forgeChecksums(_ file: inout [UInt8]) -> Bool {
        guard file.count >= firstPieceOffset, file[4] == version else { return false }
        let checksum = file.withUnsafeBytes {
            headerChecksum(head: UnsafeRawBufferPointer(rebasing: $0[..<LooseBlobFormat.checkedHeaderSize]),
                           prologue: UnsafeRawBufferPointer(rebasing: $0[LooseBlobFormat.headerSize..<firstPieceOffset]))
        }
        withUnsafeBytes(of: checksum.littleEndian) { file.replaceSubrange(24..<32, with: $0) }
        let salt = file.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: LooseBlobFormat.headerSize + 8, as: UInt64.self) }
        var offset = firstPieceOffset
        while offset + pieceHeaderSize <= file.count {
            let stored = Int(file.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) })
            let end = offset + pieceHeaderSize + stored
            guard end <= file.count else { break }
            var head = withUnsafeBytes(of: salt) { Array($0) }
            head += file[offset..<offset + 16]
            let sum = file.withUnsafeBytes { all in
                head.withUnsafeBytes { XXH3.hash(UnsafeRawBufferPointer(rebasing: all[(offset + pieceHeaderSize)..<end]), after: $0) }
            }
            withUnsafeBytes(of: sum.littleEndian) { file.replaceSubrange(offset + 16..<offset + 24, with: $0) }
            offset = end
        }
        return true
    }
}
#endif
