import Foundation
import MetricsTestKit
import Testing
@testable import BlobCache

@Suite("Memory tier")
struct MemoryTierTests {
    @Test("a value read once is served from memory after, and never once the disk tier dropped it")
    func servesAndForgets() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) { $0.memoryLimit = 1 << 20 })
        let value = Samples.random(4096)
        try cache.set(value, forKey: "k", expiry: .after(.seconds(10)))
        #expect(try cache.bytes(forKey: "k") == value)
        #expect(cache.statistics().memoryHits == 0)
        #expect(try cache.bytes(forKey: "k") == value)
        #expect(cache.statistics().memoryHits == 1, "kept at its first read (the tier has room): the second came from memory")
        // Another value for the key: the new one, not the remembered one.
        let other = Samples.random(4096, seed: 2)
        try cache.set(other, forKey: "k", expiry: .after(.seconds(10)))
        #expect(try cache.bytes(forKey: "k") == other)
        // Expired: a miss, though memory held it.
        #expect(try cache.bytes(forKey: "k") == other)
        clock.advance(by: .seconds(11))
        #expect(try cache.bytes(forKey: "k") == nil)
        // Removed: a miss.
        try cache.set(value, forKey: "r")
        _ = try cache.bytes(forKey: "r")
        _ = try cache.bytes(forKey: "r")
        try cache.removeValue(forKey: "r")
        #expect(try cache.bytes(forKey: "r") == nil)
        // Purged: read from disk again.
        try cache.set(value, forKey: "p")
        _ = try cache.bytes(forKey: "p")
        _ = try cache.bytes(forKey: "p")
        let before = cache.statistics().memoryHits
        cache.purgeMemory()
        #expect(try cache.bytes(forKey: "p") == value)
        #expect(cache.statistics().memoryHits == before)
    }

    @Test("another open's set, remove, clear and eviction are never hidden by this open's memory")
    func otherOpensChanges() throws {
        let dir = TemporaryDirectory()
        let reader = try BlobCache(directory: dir.path, configuration: .testing { $0.memoryLimit = 1 << 20 })
        let writer = try BlobCache(directory: dir.path, configuration: .testing { $0.memoryLimit = 0 })
        let first = Samples.random(3000), second = Samples.random(3000, seed: 2)
        try writer.set(first, forKey: "k")
        for _ in 0..<3 { #expect(try reader.bytes(forKey: "k") == first) }
        #expect(reader.statistics().memoryHits == 2)
        try writer.set(second, forKey: "k")
        #expect(try reader.bytes(forKey: "k") == second)
        try writer.removeValue(forKey: "k")
        #expect(try reader.bytes(forKey: "k") == nil)
        try writer.set(first, forKey: "k")
        #expect(try reader.bytes(forKey: "k") == first)
        try writer.removeAll()
        #expect(try reader.bytes(forKey: "k") == nil)
        try writer.set(first, forKey: "k")
        for _ in 0..<3 { _ = try reader.bytes(forKey: "k") }
        try writer.setLimits(.init(maxEntries: 1))
        try writer.set(second, forKey: "newer")   // evicts "k"
        #expect(try reader.bytes(forKey: "k") == nil)
        #expect(try reader.bytes(forKey: "newer") == second)
    }

    @Test("async reads are answered from memory, counted, timed, and never hide another open's change")
    func asyncReadsFromMemory() async throws {
        let dir = TemporaryDirectory()
        let metrics = TestMetrics()
        var configuration = BlobCache.Configuration.testing { $0.memoryLimit = 1 << 20 }
        configuration.metricsFactory = metrics
        let reader = try BlobCache(directory: dir.path, configuration: configuration)
        let writer = try BlobCache(directory: dir.path, configuration: .testing { $0.memoryLimit = 0 })
        let first = Samples.random(3000), second = Samples.random(3000, seed: 2)
        try writer.set(first, forKey: "k")
        for _ in 0..<3 { #expect(try await reader.async.bytes(forKey: "k") == first) }
        let stats = reader.statistics()
        #expect(stats.hits == 3 && stats.memoryHits == 2, "the first read kept it; the next two came from memory")
        #expect(try metrics.expectTimer("blobcache.get.duration", [("namespace", "")]).values.count == 3,
                "a memory hit is timed like any get")
        try writer.set(second, forKey: "k")
        #expect(try await reader.async.bytes(forKey: "k") == second)
        try writer.removeValue(forKey: "k")
        #expect(try await reader.async.bytes(forKey: "k") == nil)
    }

    @Test("values over an eighth of the limit are not kept; the limit holds by bytes, LRU out first")
    func limits() {
        var tier = MemoryTier(limit: 8000)
        let ids = (0..<10).map { BlobID(hashing: [UInt8($0)]) }
        tier.insert([UInt8](repeating: 1, count: 1001), for: ids[0])
        #expect(!tier.contains(ids[0]), "over limit / 8")
        for n in 1...9 { tier.insert([UInt8](repeating: UInt8(n), count: 1000), for: ids[n]) }
        #expect(tier.bytes == 8000)
        #expect(!tier.contains(ids[1]) && tier.contains(ids[2]))
        _ = tier.value(for: ids[2])   // now most recent: the next insert drops ids[3]
        tier.insert([UInt8](repeating: 0, count: 1000), for: ids[0])
        #expect(tier.contains(ids[2]) && !tier.contains(ids[3]))
        #expect(tier.bytes <= 8000)
        tier.remove(ids[2])
        #expect(tier.bytes == 7000 && tier.count == 7)
    }

    @Test("with room a value is kept at once; once full, at its second read from disk (the doorkeeper)")
    func doorkeeper() {
        var tier = MemoryTier(limit: 80_000)
        let ids = (0..<200).map { BlobID(hashing: [UInt8($0)]) }
        let roomy = tier.admit(ids[0], size: 1000)
        #expect(roomy, "room: kept at once")
        for n in 0..<80 { tier.insert([UInt8](repeating: UInt8(n), count: 1000), for: ids[n]) }
        #expect(tier.bytes == 80_000)
        let first = tier.admit(ids[100], size: 1000), second = tier.admit(ids[100], size: 1000)
        #expect(!first && second, "full: kept at its second read")
        let large = [tier.admit(ids[101], size: 20_000), tier.admit(ids[101], size: 20_000)]
        #expect(large == [false, false], "over limit / 8: never")
    }

    @Test("a negative memory limit is refused")
    func negativeLimit() {
        #expect(throws: BlobCacheError.self) {
            try BlobCache(directory: TemporaryDirectory().path, configuration: .testing { $0.memoryLimit = -1 })
        }
    }
}
