import ArgumentParser
import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

struct Fsck: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the cache's integrity (like git fsck); --repair fixes what it finds.",
        discussion: """
            One line per finding: <problem-id> <blob id or key> <path>: <detail>, then a summary. \
            Errors set the exit code; notes (dangling-blob, stale-temp, empty-shard, size-mismatch, unknown-file) do not. \
            Exit: 0 no errors, 1 errors found and all repaired, 4 errors left, 8 cannot open (in use past --wait). Without --repair it runs beside other processes using the cache; --repair holds DIR/lock throughout. \
            Problem ids are listed in docs/FSCK.md.
            """)
    @Flag(help: "Fix everything reported.") var repair = false
    @Flag(help: "Skip the MD5 of each blob (header, length, checksum and decoding are still checked).") var fast = false
    @Flag(help: "Print findings and summary as one JSON object.") var json = false
    @OptionGroup var global: GlobalOptions

    struct Summary: Encodable {
        let errors: Int
        let notes: Int
        let entriesChecked: Int
        let blobsChecked: Int
        let bytesChecked: Int
        let repaired: Bool
        let errorsLeft: Int
        let exitCode: Int32
    }

    struct Report: Encodable {
        let findings: [BlobCache.Finding]
        let summary: Summary
    }

    func run() throws {
        var options = BlobCache.CheckOptions()
        options.repair = repair
        options.fast = fast
        options.lockTimeout = try global.lockTimeout
        options.encryption = try global.encryption
        // A missing DIR is no cache to check (not a new, empty one that checks clean).
        try global.requireCache()
        // Without --repair a cap only reports what is over it (over-limit); it evicts nothing.
        if global.maxSize != nil || global.maxEntries != nil {
            let saved = try Failure.opening { try BlobCache.defaultLimits(in: global.resolvedDirectory) }
            options.limits = .init(maxStoredBytes: global.maxSize ?? saved.maxStoredBytes,
                                   maxEntries: global.maxEntries ?? saved.maxEntries)
        }
        if Output.isTerminal && !json && !global.quiet { Streams.writeStandardError("fsck: checking \(global.resolvedDirectory)…\n") }
        let report = try Failure.opening { try BlobCache.check(directory: global.resolvedDirectory, options: options) }
        let summary = Summary(errors: report.errors.count, notes: report.notes.count, entriesChecked: report.entriesChecked,
                              blobsChecked: report.blobsChecked, bytesChecked: report.bytesChecked, repaired: report.repaired,
                              errorsLeft: report.repaired ? report.errorsLeft.count : report.errors.count, exitCode: report.exitCode)
        if json {
            try Output.json(Report(findings: report.findings, summary: summary))
        } else {
            for finding in report.findings { print(finding) }
            var line = "fsck: \(summary.errors) errors, \(summary.notes) notes; \(summary.entriesChecked) entries, \(summary.blobsChecked) blobs, \(summary.bytesChecked) bytes checked"
            if report.repaired { line += "; repaired, \(summary.errorsLeft) errors left" }
            print(line)
        }
        if report.exitCode != 0 { throw ExitCode(report.exitCode) }
    }
}
