import BlobCache
import Foundation

/// What `GET /status` returns: the cache's totals, limits and statistics, as JSON.
///
///     let json = try StatusReport(cache: cache, server: figures).json()
struct StatusReport: Encodable {
    /// The server's own figures: where it listens, its body limit, requests answered.
    struct ServerFigures: Encodable {
        var listen: String
        var maxBodyBytes: Int
        var requests: Int
    }

    /// The cache's caps; `null` for none (written out, not left out).
    struct Limits: Encodable {
        var maxSize: Int?
        var maxEntries: Int?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(maxSize, forKey: .maxSize)
            try container.encode(maxEntries, forKey: .maxEntries)
        }

        private enum CodingKeys: String, CodingKey { case maxSize, maxEntries }
    }

    let directory: String
    let entries: Int
    let blobs: Int
    let logicalBytes: Int
    let storedBytes: Int
    let limits: Limits
    let hitRatio: Double
    /// Counts since the server opened the cache.
    let sinceOpen: BlobCache.Counters
    /// Counts over the cache's life (earlier opens that closed cleanly, plus this one).
    let lifetime: BlobCache.Counters
    let server: ServerFigures

    /// Reads the figures (blocking: call it on the disk queue).
    init(cache: BlobCache, server: ServerFigures) throws {
        let totals = try cache.totals()
        let statistics = cache.statistics()
        directory = cache.directory
        (entries, blobs, logicalBytes, storedBytes) = (totals.entries, totals.blobs, totals.logicalBytes, totals.storedBytes)
        limits = Limits(maxSize: totals.limits.maxStoredBytes, maxEntries: totals.limits.maxEntries)
        hitRatio = (statistics.sinceOpen.hitRatio * 10_000).rounded() / 10_000
        (sinceOpen, lifetime) = (statistics.sinceOpen, statistics.lifetime)
        self.server = server
    }

    /// One line of JSON, keys sorted.
    func json() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(self)) + [UInt8(ascii: "\n")]
    }
}
