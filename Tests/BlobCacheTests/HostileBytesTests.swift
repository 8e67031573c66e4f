import Foundation
import Testing
@testable import BlobCache

/// Total parsers: every length, offset, count and time read from a file is
/// checked before use, so damaged or forged bytes give a miss, a report or a typed error, never
/// a trap, a hang or an allocation the file's real size does not justify.
@Suite("Hostile bytes")
struct HostileBytesTests {
    // MARK: Forging

    /// Appends `records` to the journal of the closed cache at `root`, framed with its salt, as
    /// anyone who can write DIR could (the CRC is not a secret).
    private func appendJournalRecords(_ root: String, _ records: [JournalRecord]) {
        let path = root + "/journal"
        let image = readFile(path)
        guard case .success(let header) = image.withUnsafeBytes({ JournalFormat.decodeHeader($0) }) else {
            Issue.record("journal header does not parse")
            return
        }
        var writer = BinaryWriter(capacity: 100 * records.count)
        for record in records { JournalFormat.frame(record, seed: JournalFormat.seed(salt: header.salt), cipher: nil, into: &writer) }
        writeFile(path, image + writer.bytes)
    }

    /// A `set` record for `key` whose blob claims the given lengths and place.
    private func forgedSet(_ key: String, raw: Int, stored: Int, place: BlobPlace = .loose, id: BlobID? = nil) -> JournalRecord {
        let id = id ?? BlobID(hashing: Array(key.utf8))
        return .set(EntryRecord(key: key, blob: BlobInfo(id: id, codec: .none, rawLength: raw, payloadLength: stored, place: place),
                                pinned: false, created: 1, expiry: Int64.max, access: 1))
    }

    private func makeCache(_ root: String, _ change: (inout BlobCache.Configuration) -> Void = { _ in }) throws {
        var configuration = BlobCache.Configuration()
        change(&configuration)
        let cache = try BlobCache(directory: root, configuration: configuration)
        try cache.set(Samples.random(500, seed: 1), forKey: "packed")
        try cache.set(Samples.random(100_000, seed: 2), forKey: "loose")
        try cache.close()
    }

    private func expectIntact(_ cache: BlobCache) throws {
        #expect(same(try cache.bytes(forKey: "packed"), Samples.random(500, seed: 1)))
        #expect(same(try cache.bytes(forKey: "loose"), Samples.random(100_000, seed: 2)))
    }

    // MARK: Loose blobs

    @Test("a flipped bit in a loose blob's value length: fsck reports it and an open after a lost journal skips it")
    func flippedLengthBit() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        let value = Array(String(repeating: "hello\n", count: 50_000).utf8)
        let cache = try BlobCache(directory: root, configuration: .testing { $0.packThreshold = 0 })
        try cache.set(value, forKey: "k")
        try cache.set(Samples.random(5_000, seed: 9), forKey: "other")
        try cache.close()
        let file = looseFile(root, BlobID(hashing: value))
        patchFile(file, at: 14, [0x40])   // the raw length's sixth byte: 2^46 and more
        let report = try BlobCache.check(directory: root)
        #expect(report.findings.contains { $0.problem == "blob-corrupt" && $0.path == file })
        try FileManager.default.removeItem(atPath: root + "/journal")
        let reopened = try BlobCache(directory: root)
        #expect(try reopened.bytes(for: BlobID(hashing: value)) == nil)
        #expect(same(try reopened.bytes(for: BlobID(hashing: Samples.random(5_000, seed: 9))), Samples.random(5_000, seed: 9)))
        try reopened.close()
    }

    @Test("a loose blob whose stored length field is near Int.max reads as a miss")
    func looseStoredLengthNearIntMax() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        try makeCache(root)
        let file = looseFile(root, BlobID(hashing: Samples.random(100_000, seed: 2)))
        patchFile(file, at: 16, [0xF0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F])
        let cache = try BlobCache(directory: root)
        // A damaged blob is reported once (its entries dropped), then a plain miss.
        #expect(throws: BlobCacheError.self) { try cache.bytes(forKey: "loose") }
        #expect(try cache.bytes(forKey: "loose") == nil)
        #expect(same(try cache.bytes(forKey: "packed"), Samples.random(500, seed: 1)))
        try cache.close()
    }

    @Test("decoding never allocates more than the payload can expand to, whatever length is claimed")
    func decodeBoundedByPayload() {
        let payload: [UInt8] = Array(repeating: 7, count: 64)
        for tag in [CodecTag.none, .lz4, .zlib] {
            let decoded = payload.withUnsafeBytes { Compression.decode($0, tag: tag, rawCount: 1 << 46) }
            #expect(decoded == nil, "\(tag.name)")
        }
    }

    // MARK: Journal

    @Test("journal records claiming lengths near Int.max stop replay there; what came before is intact")
    func journalLengthsNearIntMax() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        try makeCache(root)
        appendJournalRecords(root, [forgedSet("forged", raw: Int.max - 8, stored: Int.max - 8)])
        let cache = try BlobCache(directory: root)
        guard case .stoppedAtCorruption = cache.openReport.recovery else {
            Issue.record("replay did not stop at the forged record: \(cache.openReport.recovery)")
            return
        }
        try expectIntact(cache)
        #expect(try cache.bytes(forKey: "forged") == nil)
        try cache.close()
    }

    @Test("journal records whose lengths sum past any cache stop replay before a total overflows")
    func journalTotalsOverflow() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        try makeCache(root)
        let records = (0..<33_000).map { forgedSet("f\($0)", raw: 1 << 48, stored: 1 << 48) }
        appendJournalRecords(root, records)
        let cache = try BlobCache(directory: root)
        guard case .stoppedAtCorruption = cache.openReport.recovery else {
            Issue.record("replay did not stop: \(cache.openReport.recovery)")
            return
        }
        try expectIntact(cache)
        try cache.close()
    }

    @Test("records naming one blob with different lengths do not make a total drift below zero")
    func journalLengthDrift() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        try makeCache(root)
        let id = BlobID(hashing: Array("shared".utf8))
        var records = [forgedSet("k1", raw: 1 << 48, stored: 1 << 20, id: id)]
        records += (0..<40_000).map { _ in forgedSet("k2", raw: 0, stored: 1 << 20, id: id) }
        appendJournalRecords(root, records)
        let cache = try BlobCache(directory: root)
        try expectIntact(cache)
        #expect(try cache.totals().entryLogicalBytes >= 0)
        try cache.close()
    }

    @Test("an access time of Int64.min in the journal does not trap the next get")
    func accessTimeExtreme() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        try makeCache(root)
        appendJournalRecords(root, [.access(key: "packed", time: Int64.min)])
        let cache = try BlobCache(directory: root)
        try expectIntact(cache)
        try cache.close()
    }

    @Test("a packed record the journal places past the newest segment's end is dropped; the segment is not extended")
    func packedRecordPastSegmentEnd() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        try makeCache(root)
        let segment = root + "/packs/" + (try FileManager.default.contentsOfDirectory(atPath: root + "/packs").filter { $0.hasSuffix(".pack") }.sorted().last!)
        let number = PackFormat.segmentNumber(fromFileName: String(segment.split(separator: "/").last!))!
        let size = readFile(segment).count
        appendJournalRecords(root, [forgedSet("far", raw: 1 << 31, stored: 1 << 31, place: .packed(segment: number, offset: 16))])
        let cache = try BlobCache(directory: root)
        try expectIntact(cache)
        #expect(try cache.bytes(forKey: "far") == nil)
        try cache.set(Samples.random(300, seed: 5), forKey: "after")
        try cache.close()
        #expect(readFile(segment).count < 1 << 20, "the segment was extended towards the forged record")
        #expect(readFile(segment).count >= size)
    }

    // MARK: Small files

    @Test("a stats file holding Int.max counts does not trap open, close or totals")
    func statsAtIntMax() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        try makeCache(root)
        let big = Int.max
        let json = "{\"hits\":\(big),\"misses\":\(big),\"sets\":\(big),\"deduplicatedSets\":\(big),\"evictions\":\(big),"
            + "\"expirations\":\(big),\"corruptReads\":\(big),\"journalCompactions\":\(big),\"packCollections\":\(big)}"
        writeFile(root + "/stats", Array(json.utf8))
        let cache = try BlobCache(directory: root)
        try expectIntact(cache)
        #expect(try cache.bytes(forKey: "absent") == nil)
        #expect(try cache.totals().counters.hits == Int.max)
        try cache.close()
        let again = try BlobCache(directory: root)
        #expect(try again.totals().counters.misses == Int.max)
        try again.close()
    }

    @Test("a sparse config of a terabyte is refused with a typed error, not read")
    func sparseConfig() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        try makeCache(root)
        writeFile(root + "/config", [])
        truncateFile(root + "/config", to: 1 << 40)
        #expect(throws: BlobCacheError.self) { try BlobCache(directory: root) }
    }

    @Test("sparse files named like segments and claiming terabytes are findings, never read, summed or deleted")
    func sparseSegments() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        try makeCache(root)
        for name in ["900000.pack", "900001.pack"] {
            writeFile(root + "/packs/" + name, [])
            truncateFile(root + "/packs/" + name, to: 1 << 43)   // 8 TiB: ext4 allows no more
        }
        let cache = try BlobCache(directory: root)
        try expectIntact(cache)
        for n in 0..<40 { try cache.set(Samples.random(2_000, seed: UInt64(100 + n)), forKey: "n\(n)") }
        for n in 0..<40 { try cache.removeValue(forKey: "n\(n)") }
        try cache.compact()
        try cache.close()
        #expect(FileManager.default.fileExists(atPath: root + "/packs/900001.pack"))
        let report = try BlobCache.check(directory: root)
        #expect(report.findings.filter { $0.problem == "not-a-regular-file" }.count == 2)
    }

    // MARK: Snapshot

    /// Recomputes a snapshot's chunk digests, their hash and the header CRC after its bytes
    /// were changed: a forgery, which the hashes alone cannot stop (they have no key).
    private func reseal(_ path: String) {
        var image = readFile(path)
        #expect(IndexSnapshot.reseal(&image))
        writeFile(path, image)
    }

    /// A field of a snapshot record to forge, and the bytes written over it.
    enum SnapshotForgery: String, CaseIterable, CustomTestStringConvertible {
        /// Nothing forged: the control, restored (so a refusal of the others is theirs).
        case nothing
        case codecByte, blobReferences, blobPinnedReferences, entryBlobOutOfRange, entryKeyPastArena, brokenLRULink
        case blobLengthTooLarge
        case keyTableSlotOutOfRange
        var testDescription: String { rawValue }

        /// The byte offset to patch in a snapshot with `header`, and the little-endian bytes.
        func patch(_ header: IndexSnapshot.Header) -> (offset: Int, bytes: [UInt8]) {
            let entry = header.entriesOffset + MemoryLayout<CacheIndex.Entry>.stride   // the second entry
            let blob = header.blobsOffset + MemoryLayout<CacheIndex.Blob>.stride        // the second blob
            func bytes<T>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }
            switch self {
            case .nothing:
                return (header.entriesOffset, [])
            case .codecByte:   // no `CodecTag` has the value 7: the record must not be read as a `Blob`
                return (blob + MemoryLayout<CacheIndex.Blob>.offset(of: \CacheIndex.Blob.codec)!, [7])
            case .blobReferences:
                return (blob + MemoryLayout<CacheIndex.Blob>.offset(of: \CacheIndex.Blob.references)!, bytes(Int32(2).littleEndian))
            case .blobPinnedReferences:
                return (blob + MemoryLayout<CacheIndex.Blob>.offset(of: \CacheIndex.Blob.pinnedReferences)!, bytes(Int32(1).littleEndian))
            case .entryBlobOutOfRange:
                return (entry + MemoryLayout<CacheIndex.Entry>.offset(of: \CacheIndex.Entry.blob)!, bytes(Int32(header.blobCount).littleEndian))
            case .entryKeyPastArena:
                // One byte short of the end: refused only by a check that counts the key's length.
                return (entry + MemoryLayout<CacheIndex.Entry>.offset(of: \CacheIndex.Entry.keyOffset)!, bytes(UInt32(header.keyBytes - 1).littleEndian))
            case .brokenLRULink:
                return (entry + MemoryLayout<CacheIndex.Entry>.offset(of: \CacheIndex.Entry.older)!, bytes(Int32(-1).littleEndian))
            case .blobLengthTooLarge:
                return (blob + MemoryLayout<CacheIndex.Blob>.offset(of: \CacheIndex.Blob.rawLength)!, bytes(Int64(BlobInfo.maxLength + 1).littleEndian))
            case .keyTableSlotOutOfRange:   // the first bucket, empty or not, names a record past the last
                return (header.keyTableOffset, bytes(Int32(header.entryCount).littleEndian))
            }
        }
    }

    /// `deferred`: the open defers the restore (`CacheState+DeferredRestore`), gets come from
    /// the mapped file (each number bounded) until `totals()` restores it; otherwise an entry
    /// that has expired by the reopen makes the open restore at once.
    @Test("a forged snapshot whose records do not agree with each other is not used; the journal is replayed",
          arguments: SnapshotForgery.allCases, [false, true])
    func forgedSnapshotStructure(_ forgery: SnapshotForgery, deferred: Bool) throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        let clock = ManualClock()
        let configuration = BlobCache.Configuration.testing(clock: clock) { $0.snapshotThreshold = 0 }
        let cache = try BlobCache(directory: root, configuration: configuration)
        for n in 0..<20 { try cache.set(Samples.random(300, seed: UInt64(n)), forKey: "k\(n)") }
        try cache.set([1], forKey: "short-lived", expiry: .after(.seconds(60)))
        try cache.close()
        let path = root + "/index"
        guard case .success(let header) = readFile(path).withUnsafeBytes({ IndexSnapshot.parseHeader($0) }) else {
            Issue.record("no snapshot was written")
            return
        }
        let (offset, bytes) = forgery.patch(header)
        patchFile(path, at: offset, bytes)
        reseal(path)
        if !deferred { clock.advance(by: .seconds(61)) }
        let reopened = try BlobCache(directory: root, configuration: configuration)
        #expect((reopened.engine.inspect { $0?.state.pendingRestore != nil } == true) == deferred)
        #expect(reopened.openReport.restoredFromSnapshot == (deferred || forgery == .nothing))
        for n in 0..<20 { #expect(same(try reopened.bytes(forKey: "k\(n)"), Samples.random(300, seed: UInt64(n)))) }
        #expect(try reopened.totals().entries == (deferred ? 21 : 20))
        #expect(FileManager.default.fileExists(atPath: path) == (forgery == .nothing))
        #expect(try reopened.entries().allSatisfy { ["none", "lz4", "zlib"].contains($0.codec) })
        try reopened.close()
    }

    @Test("saved slot tables listing a slot twice are refused (removing the slot left out would probe forever)")
    func duplicateSlots() {
        var table = SlotTable(capacity: 4)
        for slot in Int32(0)..<4 { table.insert(slot, hash: UInt64(slot) &* 0x9E37_79B9_7F4A_7C15) }
        var buckets: [SlotTable.Bucket] = []
        table.withSavedBuckets { buckets = Array($0.bindMemory(to: SlotTable.Bucket.self)) }
        let copy = FlatArray(count: buckets.count) { $0.initialize(from: buckets) }
        #expect(SlotTable(buckets: copy, slotCount: 4) != nil)
        let second = buckets.firstIndex { $0.slot == 1 }!
        buckets[second].slot = 0
        let forged = FlatArray(count: buckets.count) { $0.initialize(from: buckets) }
        #expect(SlotTable(buckets: forged, slotCount: 4) == nil)
    }

    // MARK: CLI

    @Test("blobcache put --ttl inf or 1e300 is a usage error, not a crash")
    func ttlInfinite() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        for ttl in ["inf", "1e300", "nan"] {
            let result = try cli.run(["put", "--ttl", ttl, "k"], stdin: Data("v".utf8))
            #expect(result.status == 64, "--ttl \(ttl): \(result.status) \(result.stderr)")
        }
    }
}
