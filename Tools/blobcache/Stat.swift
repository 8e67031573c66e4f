import ArgumentParser
import BlobCache
import Foundation

struct Stat: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show entries, blobs, sizes, compression ratio, dedup savings, journal, limits and counters.")

    @Flag(help: "Print one JSON object.") var json = false
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
    }

    func run() throws {
        let cache = try global.open()
        let totals = try Failure.running { try cache.totals() }
        try Failure.running { try cache.close() }
        let report = Report(
            directory: cache.directory, entries: totals.entries, blobs: totals.blobs, logicalBytes: totals.logicalBytes,
            storedBytes: totals.storedBytes, compressionRatio: (totals.compressionRatio * 1000).rounded() / 1000,
            dedupSavedBytes: totals.deduplicationSavings, deadPackBytes: totals.deadPackBytes,
            journalBytes: totals.journalBytes, journalRecords: totals.journalRecords,
            journalRedundantRecords: totals.redundantJournalRecords, maxSize: totals.limits.maxStoredBytes,
            maxEntries: totals.limits.maxEntries, counters: totals.counters)
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
            """)
    }
}
