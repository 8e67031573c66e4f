import Foundation
import Testing
@testable import BlobCache

@Suite("Dedup, limits, eviction and pinning")
struct LimitsTests {
    @Test("two keys share one blob; removing one keeps it, removing both deletes it")
    func dedupReferenceCounting() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.packThreshold = 0 })
        let value = Samples.random(10_000)
        let id = try cache.set(value, forKey: "a")
        #expect(try cache.set(value, forKey: "b") == id)
        #expect(filesBelow(dir.appending("objects")).count == 1)
        let totals = try cache.totals()
        #expect(totals.blobs == 1 && totals.entries == 2)
        #expect(totals.deduplicationSavings == value.count)
        #expect(try cache.removeValue(forKey: "a"))
        #expect(filesBelow(dir.appending("objects")).count == 1)
        #expect(same(try cache.bytes(forKey: "b"), value))
        #expect(try cache.removeValue(forKey: "b"))
        #expect(filesBelow(dir.appending("objects")).isEmpty)
        #expect(try cache.removeValue(forKey: "b") == false)
        #expect(try cache.totals().storedBytes == 0)
    }

    @Test("the byte cap holds after every set under a random workload, evicting least recently used first")
    func hardCap() throws {
        let dir = TemporaryDirectory()
        let cap = 200_000
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.maxStoredBytes = cap; $0.packThreshold = 8192 })
        var generator = SeededGenerator(seed: 3)
        for n in 0..<2000 {
            let size = Int(generator.next() % 20_000) + 1
            try cache.set(Samples.random(size, seed: UInt64(n)), forKey: "key-\(n % 300)")
            if n % 5 == 0 { _ = try cache.bytes(forKey: "key-\(Int(generator.next() % 300))") }
            #expect(try cache.totals().storedBytes <= cap)
        }
        #expect(try cache.totals().counters.evictions > 0)
    }

    @Test("the entry cap evicts exactly the least recently used entries")
    func entryCapOrder() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.maxEntries = 3; $0.eviction = .lru })
        for key in ["a", "b", "c"] { try cache.set(Array(key.utf8), forKey: key) }
        _ = try cache.bytes(forKey: "a")          // order now b, c, a
        try cache.set([4], forKey: "d")           // evicts b
        #expect(try cache.keys() == ["c", "a", "d"])
        try cache.close()
        let reopened = try BlobCache(directory: dir.path, configuration: .testing { $0.maxEntries = 2; $0.eviction = .lru })
        #expect(reopened.openReport.evictedAtOpen == 1)   // a smaller limit trims at open: c goes
        #expect(try reopened.keys() == ["a", "d"])
    }

    @Test("a value larger than the cap is refused and nothing is evicted for it")
    func oversizeRefused() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.maxStoredBytes = 10_000 })
        try cache.set(Samples.random(3000), forKey: "kept")
        #expect(throws: BlobCacheError.valueTooLarge(storedBytes: 20_040, limit: 10_000)) {   // packed: a 40-byte record header
            try cache.set(Samples.random(20_000), forKey: "huge")
        }
        #expect(try cache.keys() == ["kept"])
        #expect(filesBelow(dir.appending("objects")).isEmpty, "no staged file left behind")
    }

    @Test("pinned entries are never evicted nor removed by removeAll(); pinned bytes over the cap are refused")
    func pinning() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.maxStoredBytes = 10_000 })
        try cache.set(Samples.random(4000, seed: 1), forKey: "pinned-1", pinned: true)
        for n in 0..<20 { try cache.set(Samples.random(1000, seed: UInt64(10 + n)), forKey: "key-\(n)") }
        #expect(same(try cache.bytes(forKey: "pinned-1"), Samples.random(4000, seed: 1)))
        #expect(try cache.totals().storedBytes <= 10_000)
        try cache.set(Samples.random(4000, seed: 2), forKey: "pinned-2", pinned: true)
        #expect(throws: BlobCacheError.self) {
            try cache.set(Samples.random(4000, seed: 3), forKey: "pinned-3", pinned: true)
        }
        #expect(try cache.contains("pinned-1") && cache.contains("pinned-2"))
        try cache.removeAll()
        #expect(Set(try cache.keys()) == ["pinned-1", "pinned-2"])
        try cache.removeAll(includingPinned: true)
        #expect(try cache.keys().isEmpty)
        #expect(try cache.totals().storedBytes == 0)
    }

    @Test("under a long random workload of packed values the directory stays within its documented bound")
    func directoryBound() throws {
        let dir = TemporaryDirectory()
        let cap = 2 << 20
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.maxStoredBytes = cap })
        var generator = SeededGenerator(seed: 11)
        var worst = 0
        for n in 0..<6000 {
            let size = Int(generator.next() % 8000) + 1
            try cache.set(Samples.random(size, seed: UInt64(n)), forKey: "key-\(generator.next() % 1500)")
            if n % 7 == 0 { try cache.removeValue(forKey: "key-\(generator.next() % 1500)") }
            if n % 100 == 0 { worst = max(worst, blobBytesOnDisk(dir)) }
        }
        // docs/ARCHITECTURE.md: packs + objects <= 4/3 cap + one segment (cap/16, at least 1 MiB) + 1 MiB.
        let bound = cap * 4 / 3 + max(1 << 20, cap / 16) + (1 << 20)
        #expect(worst <= bound, "worst \(worst) > bound \(bound)")
        #expect(try cache.totals().counters.packCollections > 0)
        for key in try cache.keys() { _ = try cache.bytes(forKey: key) }
    }

    private func blobBytesOnDisk(_ dir: TemporaryDirectory) -> Int {
        (filesBelow(dir.appending("packs")).map { dir.appending("packs/" + $0) }
            + filesBelow(dir.appending("objects")).map { dir.appending("objects/" + $0) })
            .reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: $1)[.size] as? Int) ?? 0) }
    }
}
