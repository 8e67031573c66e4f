import Foundation
import Testing
@testable import BlobCache

@Suite("Eviction policies: LRU and segmented LRU")
struct EvictionPolicyTests {
    /// A cache of at most 10 entries holding 6 values used once and 4 used twice (hot).
    static func cacheWithHotValues(_ dir: TemporaryDirectory, _ policy: EvictionPolicy) throws -> BlobCache {
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.maxEntries = 10; $0.eviction = policy })
        for n in 0..<6 { try cache.set(Array("cold \(n)".utf8), forKey: "cold-\(n)") }
        for n in 0..<4 { try cache.set(Array("hot \(n)".utf8), forKey: "hot-\(n)") }
        for n in 0..<4 { #expect(try cache.bytes(forKey: "hot-\(n)") != nil) }
        return cache
    }

    /// Stores `count` values used once (a scan), each evicting one entry.
    static func scan(_ cache: BlobCache, count: Int = 20, tag: String = "scan") throws {
        for n in 0..<count { try cache.set(Array("\(tag) \(n)".utf8), forKey: "\(tag)-\(n)") }
    }

    static func hotKeysLeft(_ cache: BlobCache) throws -> Int {
        try (0..<4).filter { try cache.contains("hot-\($0)") }.count
    }

    @Test("a scan of values used once evicts no value used twice under segmented LRU, and every one under LRU")
    func scanResistance() throws {
        let segmented = TemporaryDirectory(), lru = TemporaryDirectory()
        let kept = try Self.cacheWithHotValues(segmented, .segmentedLRU)
        let lost = try Self.cacheWithHotValues(lru, .lru)
        try Self.scan(kept)
        try Self.scan(lost)
        #expect(try Self.hotKeysLeft(kept) == 4)
        #expect(try Self.hotKeysLeft(lost) == 0)
        #expect(try kept.totals().entries == 10)
        #expect(try kept.contains("scan-19") && !kept.contains("scan-0") && !kept.contains("cold-0"))
    }

    @Test("segmented LRU is the default")
    func defaultPolicy() {
        #expect(BlobCache.Configuration().eviction == .segmentedLRU)
    }

    @Test("the protected entries survive a clean close: from the snapshot, from the journal alone, and from a rewritten journal",
          arguments: ["snapshot", "journal", "rewrite"])
    func survivesRestart(path: String) throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) {
            $0.maxEntries = 10
            $0.snapshotThreshold = 0
        })
        for n in 0..<6 { try cache.set(Array("cold \(n)".utf8), forKey: "cold-\(n)") }
        for n in 0..<4 { try cache.set(Array("hot \(n)".utf8), forKey: "hot-\(n)") }
        // Past the access interval, the first two reads are journaled as they happen; the
        // others only by the close.
        clock.advance(by: .seconds(120))
        for n in 0..<4 { #expect(try cache.bytes(forKey: "hot-\(n)") != nil) }
        if path == "rewrite" { _ = try cache.compact() }
        try cache.close()
        #expect(FileManager.default.fileExists(atPath: dir.appending("index")))
        if path != "snapshot" { _ = unlink(dir.appending("index")) }
        let reopened = try BlobCache(directory: dir.path, configuration: .testing { $0.maxEntries = 10 })
        try Self.scan(reopened)
        #expect(try Self.hotKeysLeft(reopened) == 4)
    }

    @Test("a set never evicts the value it stored, even when it joins probation below every protected entry")
    func setKeepsItsValue() throws {
        let dir = TemporaryDirectory()
        // Loose files of incompressible bytes: 32 + size bytes each.
        let cache = try BlobCache(directory: dir.path, configuration: .testing {
            $0.maxStoredBytes = 2_500
            $0.packThreshold = 0
            $0.compression = .off
        })
        try cache.set(Samples.random(1_000, seed: 1), forKey: "hot")
        try cache.set(Samples.random(1_000, seed: 2), forKey: "cold")
        #expect(try cache.bytes(forKey: "hot") != nil)   // protected
        // 3,596 bytes: "cold" goes, and still over the cap, the next to go is the oldest
        // entry after it, the new value itself, unless passed over.
        try cache.set(Samples.random(1_500, seed: 3), forKey: "new")
        #expect(try cache.bytes(forKey: "new") == Samples.random(1_500, seed: 3))
        #expect(try !cache.contains("hot") && !cache.contains("cold"))
    }

    @Test("a namespace's cap stays hard: beside pinned entries over it, a new unpinned value is evicted at once")
    func namespaceCapStaysHard() throws {
        // (The cache's own caps refuse pinned entries that would fill them, so there a new
        // value always has another entry to evict before it.)
        let dir = TemporaryDirectory()
        let small = try BlobCache(directory: dir.path, configuration: .testing()).namespace("small")
        small.setLimits(maxStoredBytes: 10_000)
        for n in 0..<3 { try small.set(Samples.random(4_000, seed: UInt64(n)), forKey: "p\(n)", pinned: true) }
        try small.set(Samples.random(4_000, seed: 9), forKey: "u")
        #expect(try !small.contains("u"))
        #expect(try small.keys().sorted() == ["p0", "p1", "p2"])
    }

    @Test("fsck finds nothing wrong with a directory used with the segmented LRU, then with LRU")
    func fsckAfterSwitching() throws {
        let dir = TemporaryDirectory()
        func open(_ policy: EvictionPolicy) throws -> BlobCache {
            try BlobCache(directory: dir.path, configuration: .testing {
                $0.eviction = policy
                $0.snapshotThreshold = 0
            })
        }
        let first = try open(.segmentedLRU)
        try first.set([1], forKey: "a")
        try first.set([2], forKey: "b")
        _ = try first.bytes(forKey: "a")   // a is protected, and the close journals its use
        try first.close()
        let second = try open(.segmentedLRU)
        try second.set([3], forKey: "c")   // joins probation below a: b, c, a (the journal says b, a, c)
        try second.close()
        let lru = try open(.lru)
        try lru.set([4], forKey: "d")
        #expect(try lru.keys() == ["b", "c", "a", "d"])
        try lru.close()
        let report = try BlobCache.check(directory: dir.path)
        #expect(report.errors.map(\.description) == [])
    }

    @Test("a working set that moves on is followed: values used again later take the protected half")
    func followsAShift() throws {
        let dir = TemporaryDirectory()
        let cache = try Self.cacheWithHotValues(dir, .segmentedLRU)
        // A new set of four, each used three times, while the old hot set is not used.
        for round in 0..<3 {
            for n in 0..<4 {
                if round == 0 { try cache.set(Array("new \(n)".utf8), forKey: "new-\(n)") }
                #expect(try cache.bytes(forKey: "new-\(n)") != nil)
            }
        }
        try Self.scan(cache)
        #expect(try (0..<4).allSatisfy { try cache.contains("new-\($0)") })
        #expect(try Self.hotKeysLeft(cache) < 4)
    }

    @Test("a directory used with one policy opens with the other, keeping its entries and evicting in order")
    func switchesPolicy() throws {
        let dir = TemporaryDirectory()
        try Self.cacheWithHotValues(dir, .segmentedLRU).close()
        let lru = try BlobCache(directory: dir.path, configuration: .testing { $0.maxEntries = 10; $0.eviction = .lru })
        #expect(try lru.totals().entries == 10)
        try Self.scan(lru, count: 10)
        #expect(try Self.hotKeysLeft(lru) == 0)
        try lru.close()
        let back = try BlobCache(directory: dir.path, configuration: .testing { $0.maxEntries = 10 })
        #expect(try back.keys().count == 10)
        try back.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
    }
}

@Suite("The segmented LRU list in the index")
struct SegmentedIndexTests {
    static func record(_ n: Int, pinned: Bool = false) -> EntryRecord {
        EntryRecord(key: "key-\(n)", blob: BlobInfo(id: BlobID(hashing: Array("blob \(n)".utf8)), codec: .none, rawLength: 10,
                                                    payloadLength: 10, place: .loose),
                    pinned: pinned, created: Int64(n), expiry: .max, access: Int64(n))
    }

    /// `image` written as a snapshot file, mapped and restored: `nil` when refused.
    static func restored(_ image: [UInt8]) throws -> CacheIndex? {
        let dir = TemporaryDirectory()
        let path = CachePath(dir.appending("index"))
        try image.withUnsafeBytes { _ = try FileIO.posix.replaceAtomically(path, with: $0, durable: false) }
        guard case .success(let (file, header))? = try IndexSnapshot.map(path, io: .posix, journalSize: 1 << 40, cipher: nil) else {
            Issue.record("the snapshot did not map")
            return nil
        }
        return IndexSnapshot.restore(file, header: header)
    }

    static func snapshot(of index: CacheIndex) -> [UInt8] {
        IndexSnapshot.encode(index, journalSalt: 7, journalLength: 1 << 20, journalRecords: 10_000)
    }

    /// The list's shape: protected entries are its newest end and at most half the unpinned.
    static func expectShape(_ index: CacheIndex, _ comment: Comment) {
        let order = index.lruOrder()
        let protected = order.filter { index.entry(at: $0).isProtected }
        #expect(order.suffix(protected.count).allSatisfy { index.entry(at: $0).isProtected }, comment)
        #expect(protected.count == index.protectedEntries, comment)
        #expect(protected.count * 2 <= max(1, order.count), comment)
        #expect(index.protectedOldest == (protected.first ?? -1), comment)
    }

    @Test("random sets, uses and removals keep the shape, and a snapshot and a rewrite's replay give the same index")
    func randomOperations() throws {
        var index = CacheIndex(segmented: true)
        var generator = SeededGenerator(seed: 11)
        for step in 0..<4_000 {
            let n = Int(generator.next() % 300)
            switch generator.next() % 10 {
            case 0..<4: index.upsert(Self.record(n, pinned: generator.next() % 20 == 0), orderJournaled: true)
            case 4..<8: if let slot = index.slot(of: "key-\(n)") { index.touch(slot: slot, at: Int64(step), journaled: false) }
            default: if let slot = index.slot(of: "key-\(n)") { index.remove(slot: slot) }
            }
            if step % 97 == 0 { Self.expectShape(index, "after step \(step)") }
        }
        Self.expectShape(index, "at the end")
        #expect(index.protectedEntries > 0)

        guard let restored = try Self.restored(Self.snapshot(of: index)) else {
            Issue.record("the snapshot did not restore")
            return
        }
        #expect(restored.firstDifference(from: index) == nil)
        Self.expectShape(restored, "restored")

        var replayed = CacheIndex(segmented: true)
        for slot in index.journalOrder() { replayed.apply(.set(index.record(at: slot))) }
        #expect(replayed.firstDifference(from: index) == nil)
    }

    @Test("turned off, the order stays and nothing is protected")
    func turnedOff() {
        var index = CacheIndex(segmented: true)
        for n in 0..<10 { index.upsert(Self.record(n), orderJournaled: true) }
        for n in [3, 5, 7] { index.touch(slot: index.slot(of: "key-\(n)")!, at: 100, journaled: false) }
        let order = index.lruOrder()
        index.useSegments(false)
        #expect(index.lruOrder() == order)
        #expect(index.protectedEntries == 0 && index.protectedOldest == -1)
        #expect(order.allSatisfy { !index.entry(at: $0).isProtected })
    }

    @Test("a snapshot with protected entries whose header says it was not written segmented is refused")
    func refusesUnflaggedProtection() throws {
        var index = CacheIndex(segmented: true)
        for n in 0..<6 { index.upsert(Self.record(n), orderJournaled: true) }
        index.touch(slot: index.slot(of: "key-1")!, at: 100, journaled: false)
        var image = Self.snapshot(of: index)
        #expect(image[108] == 1)
        image[108] = 0
        let resealed = IndexSnapshot.reseal(&image)
        #expect(resealed)
        #expect(try Self.restored(image) == nil)
    }

    @Test("a snapshot whose protected entries are not the newest end of the list is refused")
    func refusesScatteredProtection() throws {
        var index = CacheIndex(segmented: true)
        for n in 0..<6 { index.upsert(Self.record(n), orderJournaled: true) }
        index.touch(slot: index.slot(of: "key-1")!, at: 100, journaled: false)
        var image = Self.snapshot(of: index)
        // In the snapshot, the protected entry is the last one (renumbered in list order): mark
        // the first one protected too, and seal the page again.
        let entries = IndexSnapshot.page
        image[entries + 55] |= 0x10   // the high byte of the first entry's length and flags: bit 28
        let resealed = IndexSnapshot.reseal(&image)
        #expect(resealed)
        #expect(try Self.restored(image) == nil)
    }
}
