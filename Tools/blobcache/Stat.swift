import ArgumentParser
import BlobCache
import Foundation

struct Stat: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show entries, blobs, sizes, compression ratio, dedup savings, journal, limits, statistics and namespaces.",
        discussion: """
            Statistics are the cache's lifetime figures (every open that closed cleanly): hits, misses, memory hits, \
            sets, deduplicated sets, evictions, expirations, bytes read and written, hit ratio. Namespaces: entries, \
            distinct blobs and bytes of each. With --namespace, the figures of that namespace alone.
            """)

    @Flag(help: "Print one JSON object.") var json = false
    @Flag(help: "Set the statistics to zero (every open's, as ccache -z does) after printing them; entries are untouched.")
    var reset = false
    @OptionGroup var global: GlobalOptions

    struct Report: Encodable {
        let directory: String
        let entries: Int
        let blobs: Int
        let logicalBytes: Int
        let storedBytes: Int
        let compressionRatio: Double
        let dedupSavedBytes: Int
        let deadPackBytes: Int
        let journalBytes: Int
        let journalRecords: Int
        let journalRedundantRecords: Int
        let maxSize: Int?
        let maxEntries: Int?
        let counters: BlobCache.Counters
        let statistics: Statistics
        let namespaces: [String: BlobCache.Namespace.Totals]
    }

    /// The lifetime statistics, as `--json` prints them.
    struct Statistics: Encodable {
        let hits, misses, memoryHits, sets, dedupedSets, evictions, expirations, bytesRead, bytesWritten: Int
        let contentCollisions, remoteRejections: Int
        let hitRatio: Double

        init(_ counters: BlobCache.Counters) {
            (hits, misses, memoryHits, sets) = (counters.hits, counters.misses, counters.memoryHits, counters.sets)
            (dedupedSets, evictions, expirations) = (counters.dedupedSets, counters.evictions, counters.expirations)
            (bytesRead, bytesWritten) = (counters.bytesRead, counters.bytesWritten)
            contentCollisions = counters.contentCollisions
            remoteRejections = counters.remoteRejections
            hitRatio = (counters.hitRatio * 10_000).rounded() / 10_000
        }
    }

    func run() throws {
        let cache = try global.open(for: .reading)
        let totals = try Failure.running { try cache.totals() }
        var namespaces = try Failure.running { try cache.namespaceTotals() }
        if let name = global.namespace {
            let figures = try Failure.running { try cache.namespace(name).totals() }
            namespaces = [name: figures]
        }
        let lifetime = cache.statistics().lifetime
        if reset { try Failure.running { try cache.resetStatistics() } }
        try Failure.running { try cache.close() }
        let statistics = Statistics(lifetime)
        let report = Report(
            directory: cache.directory, entries: totals.entries, blobs: totals.blobs, logicalBytes: totals.logicalBytes,
            storedBytes: totals.storedBytes, compressionRatio: (totals.compressionRatio * 1000).rounded() / 1000,
            dedupSavedBytes: totals.deduplicationSavings, deadPackBytes: totals.deadPackBytes,
            journalBytes: totals.journalBytes, journalRecords: totals.journalRecords,
            journalRedundantRecords: totals.redundantJournalRecords, maxSize: totals.limits.maxStoredBytes,
            maxEntries: totals.limits.maxEntries, counters: lifetime, statistics: statistics, namespaces: namespaces)
        if json { return try Output.json(report) }
        let redundancy = totals.journalRecords == 0 ? 0 : 100 * totals.redundantJournalRecords / totals.journalRecords
        print("""
            directory:          \(report.directory)
            entries:            \(report.entries)
            blobs:              \(report.blobs)
            logical bytes:      \(report.logicalBytes) (\(Size.format(report.logicalBytes)))
            stored bytes:       \(report.storedBytes) (\(Size.format(report.storedBytes)))
            compression ratio:  \(String(format: "%.2f", totals.compressionRatio))
            dedup savings:      \(report.dedupSavedBytes) bytes
            dead pack bytes:    \(report.deadPackBytes)
            journal:            \(report.journalBytes) bytes, \(report.journalRecords) records, \(redundancy)% redundant
            max size:           \(report.maxSize.map { "\($0) (\(Size.format($0)))" } ?? "none")
            max entries:        \(report.maxEntries.map(String.init) ?? "none")
            hits:               \(statistics.hits) (\(statistics.memoryHits) from memory), hit ratio \(String(format: "%.4f", statistics.hitRatio))
            misses:             \(statistics.misses)
            sets:               \(statistics.sets) (\(statistics.dedupedSets) deduplicated)
            refused collisions: \(statistics.contentCollisions)
            remote rejections:  \(statistics.remoteRejections)
            evictions:          \(statistics.evictions)
            expirations:        \(statistics.expirations)
            bytes read:         \(statistics.bytesRead) (\(Size.format(statistics.bytesRead)))
            bytes written:      \(statistics.bytesWritten) (\(Size.format(statistics.bytesWritten)))
            """)
        for (name, figures) in namespaces.sorted(by: { $0.key < $1.key }) {
            print("namespace \(BlobCache.escapedKey(name)): \(figures.entries) entries, \(figures.blobs) blobs, "
                  + "\(figures.logicalBytes) logical bytes, \(figures.storedBytes) stored bytes")
        }
    }
}
