import Foundation
import SystemPackage
import Testing
@testable import BlobCache

@Suite("Index snapshot")
struct SnapshotTests {
    /// Sets `count` entries (a few pinned, some sharing values, some with an expiry), reads a
    /// few to move them in LRU order, closes with a snapshot written, and returns what the
    /// cache held: its keys in order, entries and totals.
    private func populate(_ dir: TemporaryDirectory, count: Int = 300, clock: ManualClock)
        throws -> (keys: [String], entries: [BlobCache.EntryInfo], totals: BlobCache.Totals) {
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) { $0.snapshotThreshold = 0 })
        for n in 0..<count {
            try cache.set(Samples.random(100 + n % 50, seed: UInt64(n % 120)), forKey: "key-\(n)",
                          expiry: n % 7 == 0 ? .after(.seconds(3600)) : nil, pinned: n % 50 == 0)
        }
        for n in stride(from: 0, to: count, by: 11) { _ = try cache.bytes(forKey: "key-\(n)") }
        try cache.removeValue(forKey: "key-5")
        let state = (try cache.keys(), try cache.entries(), try cache.totals())
        try cache.close()
        #expect(FileManager.default.fileExists(atPath: dir.appending("index")))
        return state
    }

    private func expectState(_ cache: BlobCache, _ state: (keys: [String], entries: [BlobCache.EntryInfo], totals: BlobCache.Totals),
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try cache.keys() == state.keys, sourceLocation: sourceLocation)
        #expect(try cache.entries() == state.entries, sourceLocation: sourceLocation)
        let totals = try cache.totals()
        #expect(totals.entries == state.totals.entries && totals.blobs == state.totals.blobs, sourceLocation: sourceLocation)
        #expect(totals.storedBytes == state.totals.storedBytes && totals.logicalBytes == state.totals.logicalBytes,
                sourceLocation: sourceLocation)
        for n in [0, 1, 50, 120, 299] {
            #expect(same(try cache.bytes(forKey: "key-\(n)"), Samples.random(100 + n % 50, seed: UInt64(n % 120))),
                    sourceLocation: sourceLocation)
        }
    }

    @Test("a clean close writes a snapshot; the next open restores it and replays nothing")
    func restoresExactly() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let state = try populate(dir, clock: clock)
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(cache.openReport.restoredFromSnapshot)
        #expect(cache.openReport.replayedRecords == 0)
        try expectState(cache, state)
    }

    @Test("records written after the snapshot are replayed on top of it")
    func replaysTheTail() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        _ = try populate(dir, clock: clock)
        // An open that writes less than the rewrite threshold leaves the snapshot as it was.
        var cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        try cache.set(Array("new".utf8), forKey: "key-new")
        try cache.removeValue(forKey: "key-1")
        _ = try cache.bytes(forKey: "key-2")
        let state = (try cache.keys(), try cache.entries(), try cache.totals())
        try cache.close()
        cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(cache.openReport.restoredFromSnapshot)
        #expect(cache.openReport.replayedRecords >= 2)
        #expect(try cache.keys() == state.0)
        #expect(try cache.entries() == state.1)
        #expect(try cache.bytes(forKey: "key-1") == nil)
        #expect(try cache.bytes(forKey: "key-new") == Array("new".utf8))
    }

    /// Damage in the header page (or a wrong size) is found by the open; damage in the body by
    /// the restore, which the open defers (`DeferredRestoreTests`) until the first operation.
    @Test("a damaged snapshot is deleted and the whole journal replayed", arguments: [3, 20, 80, 400, 4100, 9000, -1])
    func damagedSnapshot(offset: Int) throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let state = try populate(dir, clock: clock)
        let path = dir.appending("index")
        if offset < 0 { truncateFile(path, to: readFile(path).count - 1) } else { flipByte(path, at: offset, mask: 0x10) }
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        let inHeader = offset < IndexSnapshot.page
        #expect(cache.openReport.restoredFromSnapshot == !inHeader)
        #expect(cache.openReport.recovery == .none)
        #expect(FileManager.default.fileExists(atPath: path) == !inHeader)
        try expectState(cache, state)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("a snapshot of another journal, or of more journal than there is, is not used")
    func mismatchedSnapshot() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let state = try populate(dir, clock: clock)
        let snapshot = readFile(dir.appending("index"))
        let journal = readFile(dir.appending("journal"))

        // The journal was cut back (records the snapshot reflects are gone).
        let offsets = journalRecordOffsets(journal)
        truncateFile(dir.appending("journal"), to: offsets[offsets.count / 2])
        var cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(!cache.openReport.restoredFromSnapshot)
        #expect(try cache.entries().count < state.entries.count)
        try cache.close()

        // The journal was rewritten (new salt) after the snapshot was taken.
        writeFile(dir.appending("journal"), journal)
        cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        try cache.compact()
        try cache.close()
        writeFile(dir.appending("index"), snapshot)
        cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(!cache.openReport.restoredFromSnapshot)
        #expect(!FileManager.default.fileExists(atPath: dir.appending("index")))
    }

    @Test("a torn record after the snapshot is cut off like any torn tail")
    func tornTailAfterSnapshot() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let state = try populate(dir, clock: clock)
        var journal = readFile(dir.appending("journal"))
        journal += [40, 0, 0, 0, 1, 2]    // a frame cut short
        writeFile(dir.appending("journal"), journal)
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(cache.openReport.restoredFromSnapshot)
        #expect(cache.openReport.recovery == .truncatedTornTail(at: journal.count - 6, bytesCut: 6))
        try expectState(cache, state)
    }
}

@Suite("Index storage")
struct IndexStorageTests {
    @Test("a flat array over a mapped file: copies are independent, growth leaves the mapping, the file never changes")
    func mappedFlatArray() throws {
        let dir = TemporaryDirectory()
        let path = dir.appending("words")
        let original: [UInt8] = (0..<64).map { UInt8($0) }
        writeFile(path, original)
        let file = try #require(try MappedFile(CachePath(path), io: .posix))
        // An empty section at the start: appending must not write into the mapping.
        var empty = FlatArray<UInt32>(mapping: file, offset: 0, count: 0)
        for n in 0..<100 { empty.append(UInt32(n)) }
        #expect(Array(empty) == (0..<100).map { UInt32($0) })
        #expect(Array(file.bytes) == original)
        // Four words at byte 16: read in place; a copy changes apart from it.
        let words = FlatArray<UInt32>(mapping: file, offset: 16, count: 4)
        #expect(words.isMapped && words[0] == 0x1312_1110)
        var copy = words
        copy[1] = 7
        copy.append(9)
        #expect(words[1] == 0x1716_1514 && copy[1] == 7 && copy.count == 5 && !copy.isMapped)
        // Writing in place changes the private mapping, never the file.
        var owned = FlatArray<UInt32>(mapping: file, offset: 32, count: 4)
        owned[0] = 0xFFFF_FFFF
        #expect(owned.isMapped && owned[0] == 0xFFFF_FFFF)
        #expect(readFile(path) == original)
    }

    @Test("index records keep their size: 56-byte entries and blobs, 8-byte buckets (the memory budget in docs/FORMAT.md)")
    func recordSizes() {
        #expect(MemoryLayout<CacheIndex.Entry>.stride == 56)
        #expect(MemoryLayout<CacheIndex.Blob>.stride == 56)
        #expect(MemoryLayout<SlotTable.Bucket>.stride == 8)
    }
}

@Suite("XXH64")
struct XXHash64Tests {
    /// Reference values from the `xxhash` Python package (the C library's bindings).
    @Test("matches the reference implementation at every tail length")
    func referenceVectors() {
        let data = (0..<1000).map { UInt8(truncatingIfNeeded: ($0 * 31) >> 3) }
        let expected: [(Int, UInt64)] = [
            (0, 0xEF46_DB37_51D8_E999), (1, 0xE934_A84A_DB05_2768), (3, 0xDA33_37C7_ED17_8348),
            (4, 0xD195_7A2D_D9BD_CB42), (7, 0x1F75_EE2A_ED3F_0AAE), (8, 0x0F3C_7684_CF2E_EDE0),
            (31, 0x81BD_800D_358A_6D63), (32, 0x27FF_579B_5DD7_870C), (33, 0x6CB7_7020_9F8C_B84F),
            (100, 0x834A_54FE_F8C9_1D6A), (1000, 0x2181_A1BF_AC42_7FE3),
        ]
        for (count, digest) in expected {
            #expect(data.withUnsafeBytes { XXHash64.hash(UnsafeRawBufferPointer(rebasing: $0[..<count])) } == digest, "\(count) bytes")
        }
        #expect(data.withUnsafeBytes { XXHash64.hash(UnsafeRawBufferPointer(rebasing: $0[..<100]), seed: 0x1_2345_6789) }
                == 0x0244_1597_F6EB_707A)
    }

    @Test("a stream fed in whole stripes gives the one-shot digest, however the bytes are cut")
    func streaming() {
        let data = Samples.random(5000, seed: 7)
        data.withUnsafeBytes { all in
            for count in [0, 5, 31, 32, 33, 64, 100, 1000, 4096, 5000] {
                let bytes = UnsafeRawBufferPointer(rebasing: all[..<count])
                let stripes = count & ~31
                for piece in [32, 64, 96, 1024] {
                    var stream = XXHash64.Stream(seed: 42)
                    var offset = 0
                    while offset < stripes {
                        let end = min(offset + piece, stripes)
                        stream.absorb(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
                        offset = end
                    }
                    #expect(stream.finish(tail: UnsafeRawBufferPointer(rebasing: bytes[stripes...])) == XXHash64.hash(bytes, seed: 42),
                            "\(count) bytes in pieces of \(piece)")
                }
            }
        }
    }
}

@Suite("Slot table")
struct SlotTableTests {

    @Test("random inserts and removals under heavy collisions agree with a set", arguments: [4, 1024] as [UInt64])
    func agreesWithSet(buckets: UInt64) {
        var generator = SeededGenerator(seed: buckets)
        // Few distinct hashes, so probe runs are long and removal shifts run across the wrap.
        let hashOf: (Int32) -> UInt64 = { (UInt64($0) &* 0x9E37_79B9) % buckets &+ (UInt64.max &- 2) }
        var table = SlotTable()
        var model = Set<Int32>()
        for _ in 0..<20_000 {
            let slot = Int32(generator.next() % 600)
            if model.contains(slot) {
                table.remove(slot, hash: hashOf(slot))
                model.remove(slot)
            } else {
                table.insert(slot, hash: hashOf(slot))
                model.insert(slot)
            }
            #expect(table.count == model.count)
        }
        for slot in Int32(0)..<600 {
            #expect((table.find(hash: hashOf(slot)) { $0 == slot } != nil) == model.contains(slot))
        }
    }
}
