import ArgumentParser
import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

struct Stat: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show entries, blobs, sizes, compression ratio, dedup savings, journal, limits, statistics and namespaces.",
        discussion: """
            Statistics are the cache's lifetime figures (every open that closed cleanly): hits, misses, memory hits, \
            sets, deduplicated sets, evictions, expirations, bytes read and written, hit ratio. Namespaces: entries, \
            distinct blobs and bytes of each. With --namespace, the figures of that namespace alone. \
            --json prints one object in the schema serve's GET /status answers with (docs/statistics.schema.json, \
            "schemaVersion": 1): lifetime and sinceOpen counts, journal, limits, remote, namespaces.
            """)

    @Flag(help: "Print one JSON object.") var json = false
    @Flag(help: "Set the statistics to zero (every open's, as ccache -z does) after printing them; entries are untouched.")
    var reset = false
    @OptionGroup var global: GlobalOptions

    func run() throws {
        let cache = try global.open(for: .reading)
        var report = try Failure.running { try cache.statisticsReport() }
        if let name = global.namespace {
            report.namespaces = [name: try Failure.running { try cache.namespace(name).totals() }]
        }
        if reset { try Failure.running { try cache.resetStatistics() } }
        try Failure.running { try cache.close() }
        if json { return try Output.json(report) }
        let counts = report.lifetime
        let journal = report.journal
        let redundancy = journal.records == 0 ? 0 : 100 * journal.redundantRecords / journal.records
        print("""
            directory:          \(report.directory ?? "")
            entries:            \(report.entries)
            blobs:              \(report.blobs)
            logical bytes:      \(report.logicalBytes) (\(Size.format(report.logicalBytes)))
            stored bytes:       \(report.storedBytes) (\(Size.format(report.storedBytes)))
            compression ratio:  \(Formatting.fixed(report.compressionRatio, decimals: 2))
            dedup savings:      \(report.deduplicationSavings) bytes
            dead pack bytes:    \(report.deadPackBytes)
            journal:            \(journal.bytes) bytes, \(journal.records) records, \(redundancy)% redundant
            max size:           \(report.limits.maxSize.map { "\($0) (\(Size.format($0)))" } ?? "none")
            max entries:        \(report.limits.maxEntries.map(String.init) ?? "none")
            hits:               \(counts.hits) (\(counts.memoryHits) from memory), hit ratio \(Formatting.fixed(counts.hitRatio, decimals: 4))
            misses:             \(counts.misses)
            sets:               \(counts.sets) (\(counts.deduplicatedSets) deduplicated)
            refused collisions: \(counts.contentCollisions)
            remote rejections:  \(counts.remoteRejections)
            evictions:          \(counts.evictions)
            expirations:        \(counts.expirations)
            bytes read:         \(counts.bytesRead) (\(Size.format(counts.bytesRead)))
            bytes written:      \(counts.bytesWritten) (\(Size.format(counts.bytesWritten)))
            """)
        for (name, figures) in report.namespaces.sorted(by: { $0.key < $1.key }) {
            print("namespace \(BlobCache.escapedKey(name)): \(figures.entries) entries, \(figures.blobs) blobs, "
                  + "\(figures.logicalBytes) logical bytes, \(figures.storedBytes) stored bytes")
        }
    }
}
