import Foundation
import Logging
import MetricsTestKit
import Testing
@testable import BlobCache

/// Keeps what the cache logs (a real swift-log handler, in memory).
private final class LogRecords: @unchecked Sendable {
    let entries = Locked<[(Logger.Level, String)]>([])
    var handler: LogHandler { Handler(records: self) }

    struct Handler: LogHandler {
        let records: LogRecords
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { records.entries.withLock { $0.append((event.level, "\(event.message)")) } }
    }
}

@Suite("Statistics, logging and metrics")
struct StatisticsTests {
    @Test("statistics are exact against a counted workload, since open and for the lifetime")
    func exact() throws {
        let dir = TemporaryDirectory()
        let configuration = BlobCache.Configuration.testing { $0.memoryLimit = 1 << 20; $0.maxEntries = 8 }
        var cache = try BlobCache(directory: dir.path, configuration: configuration)
        var hits = 0, misses = 0, memoryHits = 0, sets = 0, deduped = 0, bytesRead = 0
        var written = Set<BlobID>()
        for n in 0..<20 {
            let value = Samples.random(1000 + 10 * (n % 5), seed: UInt64(n % 5))
            try cache.set(value, forKey: "k\(n)")
            sets += 1
            if !written.insert(BlobID(hashing: value)).inserted { deduped += 1 }
        }
        let evictions = 12   // 20 keys, 8 kept
        for round in 0..<3 {
            for n in 0..<20 {
                if let value = try cache.bytes(forKey: "k\(n)") {
                    hits += 1
                    bytesRead += value.count
                    // Keys 12-19 remain, holding blobs 2 3 4 0 1 2 3 4: each blob is read from
                    // disk once (12-16 in round 0) and kept (the tier has room), then from memory.
                    if round > 0 || n >= 17 { memoryHits += 1 }
                } else {
                    misses += 1
                }
            }
        }
        let stats = cache.statistics()
        #expect(stats.hits == hits && stats.misses == misses && stats.sets == sets && stats.dedupedSets == deduped)
        #expect(stats.memoryHits == memoryHits && stats.bytesRead == bytesRead && stats.evictions == evictions)
        #expect(stats.expirations == 0)
        let footprints = try written.map { id -> Int in
            let value = try #require((0..<5).lazy.map { Samples.random(1000 + 10 * $0, seed: UInt64($0)) }.first { BlobID(hashing: $0) == id })
            return value.withUnsafeBytes { PreparedBlob.encoding($0, id: id, codec: .lz4, packThreshold: 64 * 1024, cipher: nil).imageCount }
        }
        #expect(stats.bytesWritten == footprints.reduce(0, +), "each distinct value written once")
        #expect(stats.hitRatio == Double(hits) / Double(hits + misses))
        #expect(stats.lifetime == stats.sinceOpen)
        try cache.close()
        #expect(cache.statistics() == stats, "after close: the figures at the close")
        cache = try BlobCache(directory: dir.path, configuration: configuration)
        _ = try cache.bytes(forKey: "missing")
        let reopened = cache.statistics()
        #expect(reopened.misses == 1 && reopened.hits == 0)
        #expect(reopened.lifetime.misses == misses + 1 && reopened.lifetime.hits == hits)
        #expect(reopened.lifetime.memoryHits == memoryHits && reopened.lifetime.bytesRead == bytesRead)
    }

    @Test("a damaged blob counts a miss and no bytes read")
    func damagedRead() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.packThreshold = 0 })
        let id = try cache.set(Samples.random(5000), forKey: "k")
        flipByte(looseFile(dir.path, id), at: 100)
        #expect(throws: BlobCacheError.self) { try cache.bytes(forKey: "k") }
        let stats = cache.statistics()
        #expect(stats.hits == 0 && stats.misses == 1 && stats.bytesRead == 0 && stats.corruptReads == 1)
    }

    @Test("an old stats file without the new counts still loads")
    func oldStatsFile() {
        let old = #"{"hits":3,"misses":1,"sets":2,"deduplicatedSets":0,"evictions":0,"expirations":0,"corruptReads":0,"journalCompactions":0,"packCollections":0}"#
        let counters = BlobCache.Counters.parse(Array(old.utf8))
        #expect(counters?.hits == 3 && counters?.memoryHits == 0 && counters?.bytesRead == 0)
    }

    @Test("metrics by namespace through the configured factory; recovery logged at notice")
    func metricsAndLogging() throws {
        let dir = TemporaryDirectory()
        let metrics = TestMetrics()
        let records = LogRecords()
        var configuration = BlobCache.Configuration.testing { $0.memoryLimit = 1 << 20 }
        configuration.metricsFactory = metrics
        configuration.logger = Logger(label: "test", factory: { _ in records.handler })
        var cache = try BlobCache(directory: dir.path, configuration: configuration)
        try cache.set(Samples.random(2000), forKey: "k")
        for _ in 0..<3 { _ = try cache.bytes(forKey: "k") }   // the second and third from memory
        _ = try cache.bytes(forKey: "none")
        try cache.namespace("ns").set([1], forKey: "k")
        _ = try cache.namespace("ns").bytes(forKey: "k")
        let root = [("namespace", "")], ns = [("namespace", "ns")]
        #expect(metrics.counterTotal(label: "blobcache.hits", dimensions: root) == 3)
        #expect(metrics.counterTotal(label: "blobcache.memory_hits", dimensions: root) == 2)
        #expect(metrics.counterTotal(label: "blobcache.misses", dimensions: root) == 1)
        #expect(metrics.counterTotal(label: "blobcache.bytes_read", dimensions: root) == 6000)
        #expect(metrics.counterTotal(label: "blobcache.hits", dimensions: ns) == 1)
        #expect(try metrics.expectTimer("blobcache.get.duration", root).values.count == 4)
        #expect(try metrics.expectTimer("blobcache.set.duration", ns).values.count == 1)
        #expect(records.entries.withLock { $0.allSatisfy { $0.0 <= .debug } }, "nothing above debug per operation")
        try cache.close()

        // A torn tail: logged once at notice when the next open cuts it.
        let journal = dir.appending("journal")
        let image = readFile(journal)
        writeFile(journal, image + [0x40, 0, 0, 0, 1, 2])
        cache = try BlobCache(directory: dir.path, configuration: configuration)
        let notices = records.entries.withLock { $0.filter { $0.0 >= .notice } }
        #expect(notices.count == 1 && notices.first?.1.contains("torn tail") == true)
        try cache.close()
    }
}
