import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What `GET /status` returns: the cache's figures in the schema `blobcache stat --json` uses
/// (`BlobCache.StatisticsReport`, docs/statistics.schema.json), with the server's own figures
/// and without the directory's path (no path of this machine goes out).
///
///     let json = try StatusReport.json(cache: cache, server: figures)
enum StatusReport {
    /// One line of JSON, keys sorted (blocking: call it on the disk queue).
    static func json(cache: BlobCache, server: BlobCache.StatisticsReport.Server) throws -> [UInt8] {
        var report = try cache.statisticsReport()
        report.directory = nil
        report.server = server
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(report)) + [UInt8(ascii: "\n")]
    }
}
