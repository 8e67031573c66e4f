import Testing
@testable import BlobCache

/// `CacheIndex.replay` (batched, keys parsed in place, CRCs checked on another core for a
/// large journal) against the record-at-a-time walk it replaces: the same index, the same end
/// and the same count of good records, on clean, damaged, refused and torn journals, each
/// replayed on one core and on two (`parallelFrom: 0`); and against an index written out by hand.
@Suite("Batched replay")
struct ReplayTests {
    private static let salt: UInt64 = 0x5EED_0F_7E57
    private static let seed: UInt64 = 0x1DE4_5EED

    /// `count` records of every kind over shared keys and blobs, as a journal image after its
    /// header: sets (some pinned, some keys not ASCII, blobs shared and packed), reads,
    /// removals, relocations and one clear in the middle.
    private static func records(_ count: Int, seed: UInt64 = 7) -> [JournalRecord] {
        var generator = SeededGenerator(seed: seed)
        func blob(_ number: Int) -> BlobInfo {
            let place: BlobPlace = number % 3 == 0 ? .loose : .packed(segment: UInt32(1 + number % 5), offset: UInt64(number * 64))
            return BlobInfo(id: BlobID(hashing: Array("blob \(number)".utf8)), codec: number % 2 == 0 ? .lz4 : .none,
                            rawLength: 100 + number, payloadLength: 60 + number, place: place)
        }
        func key(_ number: Int) -> String {
            if number % 5 == 0 { return "\u{0}/ns\(number % 3)\u{0}key/\(number)" }   // in a namespace
            return number % 7 == 0 ? "ключ/\(number)/é" : "key/\(number)/padding-so-a-record-is-longer"
        }
        return (0..<count).map { step -> JournalRecord in
            let keyNumber = Int.random(in: 0..<3_000, using: &generator)
            if step == count / 2 { return .removeAll(includingPinned: false) }
            switch Int.random(in: 0..<20, using: &generator) {
            case 0..<12:
                return .set(EntryRecord(key: key(keyNumber), blob: blob(Int.random(in: 0..<2_000, using: &generator)),
                                        pinned: Int.random(in: 0..<10, using: &generator) == 0, created: Int64(step),
                                        expiry: Bool.random(using: &generator) ? .max : Int64(10_000 + step), access: Int64(step)))
            case 12..<16:
                return .access(key: key(keyNumber), time: Int64(step))
            case 16..<19:
                return .remove(key: key(keyNumber), reason: .explicit)
            default:
                let moved = blob(Int.random(in: 0..<2_000, using: &generator))
                return .relocate(BlobInfo(id: moved.id, codec: .zlib, rawLength: moved.rawLength, payloadLength: 40,
                                          place: .packed(segment: 9, offset: UInt64(step * 16))))
            }
        }
    }

    private static func image(_ records: [JournalRecord]) -> [UInt8] {
        var writer = BinaryWriter(capacity: 120 * records.count)
        for record in records { JournalFormat.frame(record, seed: JournalFormat.seed(salt: salt), cipher: nil, into: &writer) }
        return writer.bytes
    }

    private typealias Outcome = (index: CacheIndex, end: JournalReader.End, records: Int)

    /// The record-at-a-time replay: each frame checked, parsed into a `JournalRecord` and applied.
    private static func walked(_ image: [UInt8], onto start: CacheIndex = CacheIndex(seed: seed)) -> Outcome {
        var index = start
        let walk = image.withUnsafeBytes { bytes in
            JournalReader.walk(records: bytes, at: JournalFormat.headerSize, salt: salt, cipher: nil) { record, _ in index.apply(record) }
        }
        return (index, walk.end, walk.records)
    }

    /// `CacheIndex.replay`, on this core alone (`parallel: false`) or with another checking CRCs.
    private static func replayed(_ image: [UInt8], onto start: CacheIndex = CacheIndex(seed: seed), parallel: Bool) -> Outcome {
        var index = start
        let walk = image.withUnsafeBytes {
            index.replay(records: $0, at: JournalFormat.headerSize, salt: salt, cipher: nil, parallelFrom: parallel ? 0 : .max)
        }
        return (index, walk.end, walk.records)
    }

    /// Both replays of `image` give what the walk gives.
    private static func expectBothSame(_ image: [UInt8], onto start: CacheIndex = CacheIndex(seed: seed),
                                       sourceLocation: SourceLocation = #_sourceLocation) {
        let walked = walked(image, onto: start)
        for parallel in [false, true] {
            expectSame(replayed(image, onto: start, parallel: parallel), walked, sourceLocation: sourceLocation)
        }
    }

    private static func expectSame(_ replayed: Outcome, _ walked: Outcome, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(replayed.end == walked.end, sourceLocation: sourceLocation)
        #expect(replayed.records == walked.records, sourceLocation: sourceLocation)
        #expect(replayed.index.firstDifference(from: walked.index) == nil, sourceLocation: sourceLocation)
        #expect(walked.index.firstDifference(from: replayed.index) == nil, sourceLocation: sourceLocation)
        let (a, b) = (replayed.index, walked.index)
        #expect([a.logicalBytes, a.storedBytes, a.entryLogicalBytes, a.pinnedStoredBytes, a.pinnedEntries, a.livePackedBytes]
                == [b.logicalBytes, b.storedBytes, b.entryLogicalBytes, b.pinnedStoredBytes, b.pinnedEntries, b.livePackedBytes],
                sourceLocation: sourceLocation)
        #expect(a.earliestExpiry == b.earliestExpiry, sourceLocation: sourceLocation)
        #expect(a.namespaces.usage == b.namespaces.usage, sourceLocation: sourceLocation)
    }

    /// The file offsets of an image's frames (the image starts at the journal's header size).
    private static func frameOffsets(_ image: [UInt8]) -> [Int] {
        var offsets: [Int] = [], offset = 0
        while offset < image.count {
            offsets.append(offset)
            offset += JournalFormat.frameSize + image.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
        }
        return offsets
    }

    /// Rewrites the CRC of the frame at `offset` (in the image) to match its bytes.
    private static func resealCRC(_ image: inout [UInt8], frameAt offset: Int) {
        let length = image.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
        let crc = image.withUnsafeBytes {
            CRC32.update(JournalFormat.seed(salt: salt), UnsafeRawBufferPointer(rebasing: $0[(offset + 8)..<(offset + JournalFormat.frameSize + length)]))
        }
        withUnsafeBytes(of: crc.littleEndian) { image.replaceSubrange((offset + 4)..<(offset + 8), with: $0) }
    }

    private static let large = image(records(24_000))

    @Test("a large clean journal and a small one give the walk's index")
    func cleanJournals() {
        #expect(Self.large.count >= CacheIndex.parallelReplayBytes)
        Self.expectBothSame(Self.large)
        Self.expectBothSame(Self.image(Self.records(300, seed: 8)))
        Self.expectBothSame([])
    }

    @Test("onto an index that already holds entries, as after a snapshot")
    func ontoARestoredIndex() {
        let first = Self.walked(Self.image(Self.records(2_000, seed: 9))).index
        Self.expectBothSame(Self.large, onto: first)
    }

    @Test("onto a snapshot restored where it is mapped, with a long journal after it (room made once, prefault on)")
    func ontoAMappedSnapshot() throws {
        let dir = TemporaryDirectory()
        let journal = Self.image(Self.records(2_000, seed: 9))
        let first = Self.walked(journal).index
        let path = dir.appending("index")
        let image = IndexSnapshot.encode(first, journalSalt: Self.salt, journalLength: Int64(JournalFormat.headerSize + journal.count),
                                         journalRecords: 2_000)
        try image.withUnsafeBytes { _ = try FileIO.posix.replaceAtomically(CachePath(path), with: $0, durable: false) }
        guard case .success(let (file, header))? = try IndexSnapshot.map(CachePath(path), io: .posix, journalSize: 1 << 40, cipher: nil),
              let restored = IndexSnapshot.restore(file, header: header) else {
            Issue.record("the snapshot did not restore")
            return
        }
        #expect(restored.entries.isMapped && restored.blobs.isMapped)
        // 12,000 new keys (more entries than the snapshot holds slots for), then records of
        // every kind over the old ones.
        let newKeys = (0..<12_000).map { n -> JournalRecord in
            .set(EntryRecord(key: "tail/\(n)/a key long enough for a record of about a hundred bytes",
                             blob: BlobInfo(id: BlobID(hashing: Array("tail blob \(n % 9_000)".utf8)), codec: .none, rawLength: 10 + n,
                                            payloadLength: 10 + n, place: .loose),
                             pinned: false, created: Int64(n), expiry: .max, access: Int64(n)))
        }
        let tail = Self.image(newKeys + Self.records(4_000, seed: 10))
        #expect(tail.count >= CacheIndex.parallelReplayBytes)
        Self.expectBothSame(tail, onto: restored)
    }

    @Test("what a few records make, written out by hand: keys, shared blobs, pinning, order, a namespace")
    func handWrittenIndex() {
        func blob(_ number: Int, raw: Int, place: BlobPlace = .loose) -> BlobInfo {
            BlobInfo(id: BlobID(hashing: [UInt8(number)]), codec: .none, rawLength: raw, payloadLength: raw, place: place)
        }
        func set(_ key: String, _ blob: BlobInfo, pinned: Bool = false, at time: Int64) -> JournalRecord {
            .set(EntryRecord(key: key, blob: blob, pinned: pinned, created: time, expiry: .max, access: time))
        }
        let spaced = "\u{0}/ns\u{0}c"
        let image = Self.image([
            set("a", blob(1, raw: 100), at: 1), set("b", blob(1, raw: 100), at: 2), set(spaced, blob(2, raw: 50), pinned: true, at: 3),
            .access(key: "a", time: 4), .remove(key: "b", reason: .explicit), set("d", blob(3, raw: 30), at: 6),
            .relocate(blob(3, raw: 30, place: .packed(segment: 2, offset: 64))), .access(key: "gone", time: 8),
        ])
        for parallel in [false, true] {
            let (index, end, records) = Self.replayed(image, parallel: parallel)
            #expect(end == .clean && records == 8)
            #expect(index.entryCount == 3 && index.blobCount == 3 && index.pinnedEntries == 1)
            #expect(index.lruOrder().map(index.key(at:)) == ["a", "d"])
            #expect(index.slot(of: "b") == nil)
            #expect(index.blob(BlobID(hashing: [1]))?.references == 1)
            #expect(index.blob(BlobID(hashing: [3]))?.info.place == .packed(segment: 2, offset: 64))
            #expect(index.entry(at: index.slot(of: "a")!).access == 4)
            #expect(index.logicalBytes == 180 && index.entryLogicalBytes == 180 && index.pinnedStoredBytes == blob(2, raw: 50).footprint)
            #expect(index.namespaces.usage[NamespaceKey.prefix(of: "ns")]?.entries == 1)
            #expect(index.namespaces.usage[NamespaceKey.prefix(of: "ns")]?.logicalBytes == 50)
        }
    }

    @Test("a bad CRC stops both at that record: the first, at a 256-frame mark, mid-journal")
    func badCRCs() {
        let offsets = Self.frameOffsets(Self.large)
        for victim in [0, 255, 256, offsets.count / 3] {
            var image = Self.large
            image[offsets[victim] + 4] ^= 0x55
            let walked = Self.walked(image)
            #expect(walked.end == .corrupt(offset: JournalFormat.headerSize + offsets[victim], reason: "record CRC mismatch"))
            #expect(walked.records == victim)
            Self.expectBothSame(image)
        }
    }

    @Test("frames up to a checked boundary skip their CRC, and no frame past it does (any start offset)")
    func checkedBoundary() {
        var image = Self.image(Self.records(40, seed: 11))
        let offsets = Self.frameOffsets(image), victim = 20
        image[offsets[victim] + 4] ^= 0x55   // the payload still parses: only the CRC tells
        let start = (1 << 20) + 7            // as after a snapshot
        func frames(trustingUpTo boundary: Int) -> (records: Int, end: JournalReader.End) {
            image.withUnsafeBytes { bytes in
                var frames = JournalReader.Frames(records: bytes, at: start, salt: Self.salt)
                frames.assumeChecked(upTo: boundary)
                var count = 0
                while true {
                    switch frames.next() {
                    case .frame: count += 1
                    case .end(let end): return (count, end)
                    }
                }
            }
        }
        let bad = JournalReader.End.corrupt(offset: start + offsets[victim], reason: "record CRC mismatch")
        #expect(frames(trustingUpTo: start).end == bad)
        #expect(frames(trustingUpTo: start + offsets[victim]).end == bad)
        #expect(frames(trustingUpTo: start + offsets[victim + 1]) == (40, .clean))
        // A check run first publishes the bad frame's start, and the applier, trusting it, stops there.
        let checked = CheckedFrames(start: start)
        image.withUnsafeBytes { checked.check($0, salt: Self.salt) }
        #expect(checked.end == start + offsets[victim])
        var index = CacheIndex(seed: Self.seed)
        let applied = image.withUnsafeBytes { index.applyFrames($0, at: start, salt: Self.salt, checked: checked) }
        #expect(applied.end == bad && applied.records == victim)
        // Told the bad frame was checked, it takes it: the skip is real.
        var trusting = CacheIndex(seed: Self.seed)
        let trusted = image.withUnsafeBytes {
            trusting.applyFrames($0, at: start, salt: Self.salt, checked: CheckedFrames(start: start + offsets[victim + 1]))
        }
        #expect(trusted.end == .clean && trusted.records == 40)
    }

    @Test("a record that does not parse, with or without a good CRC, ends both the same way")
    func unparsableRecord() {
        let offsets = Self.frameOffsets(Self.large)
        let victim = offsets[offsets.count / 4]
        var resealed = Self.large
        resealed[victim + 8] = 0x7F   // a type no record has
        Self.resealCRC(&resealed, frameAt: victim)
        let walked = Self.walked(resealed)
        #expect(walked.end == .corrupt(offset: JournalFormat.headerSize + victim, reason: JournalReader.unparsable(kind: 0x7F)))
        Self.expectBothSame(resealed)
        // Both the type and the CRC wrong: the CRC is what a walk reports first.
        var both = Self.large
        both[victim + 8] = 0x7F
        #expect(Self.walked(both).end == .corrupt(offset: JournalFormat.headerSize + victim, reason: "record CRC mismatch"))
        Self.expectBothSame(both)
    }

    @Test("a torn tail and a zero-filled tail end both where the last good record ends")
    func tornTails() {
        let cut = Array(Self.large.dropLast(5))
        Self.expectBothSame(cut)
        Self.expectBothSame(Self.large + [UInt8](repeating: 0, count: 4_096))
    }

    @Test("a record claiming more bytes than any cache holds is refused where the walk refuses it")
    func refusedRecord() {
        let claims = (0..<4_200).map { number -> JournalRecord in
            .set(EntryRecord(key: "huge/\(number)", blob: BlobInfo(id: BlobID(hashing: Array("huge \(number)".utf8)), codec: .none,
                                                                   rawLength: BlobInfo.maxLength, payloadLength: 1, place: .loose),
                             pinned: false, created: 1, expiry: .max, access: 1))
        }
        let image = Self.large + Self.image(claims)
        let walked = Self.walked(image)
        guard case .corrupt(_, let reason) = walked.end else {
            Issue.record("the walk took every claim: \(walked.end)")
            return
        }
        #expect(reason == JournalReader.refused(kind: JournalRecord.Kind.set.rawValue))
        Self.expectBothSame(image)
    }

    @Test("a key that is not UTF-8 is indexed as its String holds it, as the walk does")
    func keyNotUTF8() {
        let entry = EntryRecord(key: "AB", blob: BlobInfo(id: BlobID(hashing: [1]), codec: .none, rawLength: 1, payloadLength: 1, place: .loose),
                                pinned: false, created: 1, expiry: .max, access: 1)
        var image = Self.large + Self.image([.set(entry), .access(key: "AB", time: 5)])
        let offsets = Self.frameOffsets(image)
        for frame in offsets.suffix(2) {
            // The key's two bytes follow the type byte, the access record's time and the length.
            let keyAt = frame + JournalFormat.frameSize + (frame == offsets.last! ? 8 : 0) + 4
            #expect(image[keyAt] == UInt8(ascii: "A"))
            image[keyAt] = 0xFF
            Self.resealCRC(&image, frameAt: frame)
        }
        let walked = Self.walked(image)
        #expect(walked.index.slot(of: "\u{FFFD}B") != nil)
        #expect(walked.end == .clean)
        Self.expectBothSame(image)
    }
}
