import ArgumentParser
import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

struct Expire: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove expired entries.")
    @OptionGroup var global: GlobalOptions

    func run() throws {
        let cache = try global.open(for: .removing)
        let removed = try Failure.running { try cache.removeExpired() }
        try Failure.running { try cache.close() }
        print("removed \(removed) expired entries")
    }
}

struct Evict: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evict least recently used entries until stored bytes are at most SIZE (e.g. 500M, 2G), or those unused for DURATION (e.g. 1d).",
        discussion: "--older-than evicts every entry not read or written for DURATION (a number and s, m, h, d or w; ccache's --evict-older-than), of every namespace; pinned entries never.")
    @Option(name: .customLong("to"), help: ArgumentHelp("The size to trim to.", valueName: "SIZE"), transform: Size.parse)
    var size: Int?
    @Option(help: ArgumentHelp("Evict the entries unused for this long: 90s, 30m, 12h, 1d, 2w.", valueName: "DURATION"),
            transform: Evict.duration)
    var olderThan: Double?
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if size == nil && olderThan == nil { throw ValidationError("give --to SIZE, --older-than DURATION, or both") }
        if let size, size <= 0 { throw ValidationError("--to must be positive") }
    }

    /// Seconds in `text`: a positive number and a unit, s, m, h, d or w (seconds without one).
    static func duration(_ text: String) throws -> Double {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        let unit = text.last.flatMap { units[$0] }
        guard let number = Double(unit == nil ? text : String(text.dropLast())), number.isFinite, number > 0,
              number * (unit ?? 1) <= 1e12 else {
            throw ValidationError("--older-than takes a positive number and s, m, h, d or w (90s, 30m, 12h, 1d, 2w), got '\(text)'")
        }
        return number * (unit ?? 1)
    }

    func run() throws {
        let cache = try global.open(for: .filling)
        let before = try Failure.running { try cache.totals() }
        if let olderThan {
            try Failure.running { try cache.evictEntries(unusedSince: Date().addingTimeInterval(-olderThan)) }
        }
        if let size {
            try Failure.running { try cache.setLimits(.init(maxStoredBytes: size, maxEntries: before.limits.maxEntries)) }
        }
        let after = try Failure.running { try cache.totals() }
        try Failure.running { try cache.close() }
        print("evicted \(before.entries - after.entries) entries; \(after.storedBytes) bytes stored")
    }
}

struct Clear: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove every entry (pinned ones only with --include-pinned); with --namespace, that namespace's alone.")
    @Flag(help: "Remove pinned entries too.") var includePinned = false
    @OptionGroup var global: GlobalOptions

    func run() throws {
        let cache = try global.open(for: .removing)
        let keys = global.keySpace(of: cache)
        // Without --namespace every entry goes, namespaces' too.
        let count = { try global.namespace == nil ? cache.totals().entries : keys.entries().count }
        let before = try Failure.running { try count() }
        try Failure.running { try keys.removeAll(includingPinned: includePinned) }
        let after = try Failure.running { try count() }
        try Failure.running { try cache.close() }
        print("removed \(before - after) entries")
    }
}

struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rewrite the journal to live entries; purge expired entries, dangling blobs, temp files, empty shards and dead pack space.",
        discussion: "Safe to interrupt at any point (kill -9): the cache opens afterwards with every live entry.")
    @Option(help: ArgumentHelp("Re-encode every blob stored with another codec: lz4, zlib or none.", valueName: "CODEC"))
    var recompress: String?
    @Option(help: ArgumentHelp(
        "Encrypt everything again under the key in NEW_KEY_FILE (same forms as --key-file; the current key comes from --key-file, or none for a plain cache, which this encrypts). Needs the cache to itself; safe to kill at any point: the old key or the new one then opens it.",
        valueName: "NEW_KEY_FILE"))
    var rekey: String?
    @Flag(help: "Print one JSON object.") var json = false
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if let recompress, Codec(name: recompress) == nil { throw ValidationError("unknown codec '\(recompress)': use lz4, zlib or none") }
        if recompress != nil && rekey != nil { throw ValidationError("--rekey and --recompress are separate runs") }
    }

    func run() throws {
        let codec = recompress.flatMap(Codec.init(name:))
        let newKey = try rekey.map(KeyFile.encryption(at:))
        let cache = try global.open(for: .filling, codec: codec)
        let report: BlobCache.CompactionReport
        if let newKey {
            report = try Failure.running { try cache.compact(rekeyingTo: newKey) }
        } else {
            report = try Failure.running { try cache.compact(recompressingTo: codec) }
            try Failure.running { try cache.close() }
        }
        if json { return try Output.json(report) }
        print("""
            journal: \(report.journalBytesBefore) -> \(report.journalBytesAfter) bytes (\(report.journalRecordsBefore) -> \(report.journalRecordsAfter) records)
            reclaimed: \(report.blobBytesReclaimed) blob bytes, \(report.filesDeleted) files (\(report.danglingBlobsDeleted) dangling blobs, \(report.temporaryFilesDeleted) temp files), \(report.emptyDirectoriesRemoved) empty shard directories, \(report.packSegmentsCollected) pack segments
            expired entries removed: \(report.expiredEntries)
            blobs recompressed: \(report.blobsRecompressed)
            """)
        if newKey != nil {
            print("blobs rekeyed: \(report.blobsRekeyed) (entries dropped as damaged: \(report.entriesDroppedAsDamaged))")
            if let failure = report.rekeyCleanupFailure {
                print("the new key is in force; deleting the old blobs failed (\(failure)): run compact with the new key")
            }
        }
    }
}

struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show, or with options save, the cache's default limits (in DIR/config, used by every later open) and who may use it.",
        discussion: """
            Use 'none' to remove a limit. A cache is its owner's alone (directories 0700, files 0600);             --share-with-group on makes it the group's too (2770, 0660; give the directory the team's group with chgrp),             off makes it private again.
            """)
    @Option(help: ArgumentHelp("Default cap on stored bytes, or none.", valueName: "SIZE")) var maxSize: String?
    @Option(help: ArgumentHelp("Default cap on entries, or none.", valueName: "N")) var maxEntries: String?
    @Option(help: ArgumentHelp("Let the owner's group read and write the cache (on), or only the owner (off).", valueName: "on|off"))
    var shareWithGroup: String?
    @Option(name: .customLong("dir"), help: ArgumentHelp("The cache directory.", valueName: "DIR")) var directory: String?
    @Option(help: ArgumentHelp("How long to wait while another process holds DIR/lock, then exit 8; 0 fails at once.",
                               valueName: "SECONDS")) var wait: Double = 30
    @Option(help: ArgumentHelp("The key of an encrypted cache (default: $BLOBCACHE_KEY_FILE).", valueName: "PATH"))
    var keyFile: String?
    @Flag(help: "Evict what lowering --max-size or --max-entries below what the cache holds evicts (without it: exit 64, saying how much).")
    var yes = false

    func validate() throws {
        if let shareWithGroup, !["on", "off"].contains(shareWithGroup) {
            throw ValidationError("--share-with-group takes on or off")
        }
    }

    func run() throws {
        let global = GlobalOptions.parseOrExit((directory.map { ["--dir", $0] } ?? []) + ["--wait", "\(wait)"]
                                               + (keyFile.map { ["--key-file", $0] } ?? []))
        let directory = global.resolvedDirectory
        if let shareWithGroup {
            try Failure.opening { try BlobCache.shareWithGroup(shareWithGroup == "on", in: directory) }
        }
        var limits = try Failure.running { try BlobCache.defaultLimits(in: directory) }
        var evicted: EvictionPreview?
        if maxSize != nil || maxEntries != nil {
            if let maxSize { limits.maxStoredBytes = maxSize == "none" ? nil : try Size.parse(maxSize) }
            if let maxEntries {
                guard maxEntries == "none" || (Int(maxEntries) ?? 0) > 0 else {
                    throw ValidationError("--max-entries takes a positive number or none")
                }
                limits.maxEntries = Int(maxEntries)
            }
            // Opened first: a directory that is not a cache's is refused before anything is written.
            var configuration = BlobCache.Configuration()
            configuration.lockTimeout = try global.lockTimeout
            configuration.encryption = try global.encryption
            let cache = try Failure.opening { try BlobCache(directory: directory, configuration: configuration) }
            let preview = try Failure.running {
                EvictionPreview(entries: try cache.entries(), storedBytes: try cache.totals().storedBytes, limits: limits)
            }
            if preview.entries > 0 && !yes {
                try? cache.close()
                Failure.say("these limits would evict \(preview.entries) entries (\(preview.bytes) bytes stored); nothing was changed: add --yes to evict them")
                throw ExitCode.validationFailure
            }
            try Failure.running { try BlobCache.saveDefaultLimits(limits, in: directory) }
            if preview.entries > 0 { try Failure.running { try cache.setLimits(limits) } }
            try Failure.running { try cache.close() }
            if preview.entries > 0 { evicted = preview }
        }
        print("max-size: \(limits.maxStoredBytes.map(String.init) ?? "none")")
        print("max-entries: \(limits.maxEntries.map(String.init) ?? "none")")
        if let evicted { print("evicted: \(evicted.entries) entries, \(evicted.bytes) bytes stored") }
        if shareWithGroup != nil {   // (only then: scripts read the two lines above as they were)
            var info = stat()
            let shared = lstat(directory, &info) == 0 && info.st_mode & 0o070 == 0o070
            print("shared with group: \(shared ? "yes" : "no")")
        }
    }
}
