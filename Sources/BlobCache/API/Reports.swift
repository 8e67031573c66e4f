#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension BlobCache {
    /// What opening the cache found and repaired.
    ///
    ///     if case .stoppedAtCorruption(let offset, _) = cache.openReport.recovery { log(offset) }
    public struct OpenReport: Sendable, Equatable {
        /// Journal records replayed (only those after the snapshot when one was restored).
        public var replayedRecords = 0
        /// Whether the index came from the snapshot written at the last clean close, so that
        /// only the journal after it was replayed.
        public var restoredFromSnapshot = false
        /// What had to be repaired, if anything.
        public var recovery: Recovery = .none
        /// Entries found expired and removed.
        public var expiredAtOpen = 0
        /// Entries evicted to meet limits smaller than the cache held.
        public var evictedAtOpen = 0
    }

    /// A repair made at open.
    public enum Recovery: Sendable, Equatable {
        /// The journal was intact.
        case none
        /// The last record was cut short (a writer died mid-append); it was cut off.
        case truncatedTornTail(at: Int, bytesCut: Int)
        /// A record failed its checksum; replay stopped there (entries after it are not
        /// trusted) and the journal was rewritten from what came before.
        case stoppedAtCorruption(offset: Int, reason: String)
        /// The journal's header was missing or damaged, so keys were lost; intact blobs were
        /// kept as content-addressed entries and damaged files removed.
        case rebuiltFromBlobs(reason: String, adopted: Int, removed: Int)

        var requiresRewrite: Bool {
            switch self {
            case .none, .truncatedTornTail: false
            case .stoppedAtCorruption, .rebuiltFromBlobs: true
            }
        }
    }

    /// Operation counts over the cache's life (saved in `DIR/stats` at each clean close).
    public struct Counters: Sendable, Equatable, Codable {
        /// Reads that returned a value (from memory or from disk).
        public var hits = 0
        /// Reads of absent or expired keys (and damaged blobs).
        public var misses = 0
        /// Hits served from the memory tier, without reading the disk (`Configuration.memoryLimit`).
        public var memoryHits = 0
        /// Bytes of the values reads returned.
        public var bytesRead = 0
        /// Bytes written to disk for new blobs (compressed, headers included); a deduplicated
        /// set writes none.
        public var bytesWritten = 0
        /// Values stored.
        public var sets = 0
        /// Sets whose value was already stored (nothing written but the journal record).
        public var deduplicatedSets = 0
        /// Entries evicted to stay within the limits.
        public var evictions = 0
        /// Entries removed because their expiry passed.
        public var expirations = 0
        /// Reads that found a damaged blob (their entries were dropped).
        public var corruptReads = 0
        /// Journal rewrites (automatic and `compact()`).
        public var journalCompactions = 0
        /// Pack garbage collection runs.
        public var packCollections = 0
        /// Sets refused because their value's MD5 named a stored blob with other bytes
        /// (`BlobCacheError.contentCollision`).
        public var contentCollisions = 0
        /// Key records and blobs a remote tier returned that were refused: damaged, without a
        /// valid authentication tag, or not the value they name (`statistics().remote.rejected`,
        /// kept over the cache's life).
        public var remoteRejections = 0

        /// Sets whose value was already stored: `deduplicatedSets`.
        public var dedupedSets: Int { deduplicatedSets }
        /// hits / (hits + misses); 0 before the first read.
        public var hitRatio: Double {
            // In doubles: counts read from `DIR/stats` may be anything up to Int.max each.
            let reads = Double(hits) + Double(misses)
            return reads == 0 ? 0 : Double(hits) / reads
        }

        /// No counts yet.
        ///
        ///     let zero = BlobCache.Counters()
        public init() {}

        private enum CodingKeys: String, CodingKey {
            case hits, misses, memoryHits, bytesRead, bytesWritten, sets, deduplicatedSets, evictions, expirations
            case corruptReads, journalCompactions, packCollections, contentCollisions, remoteRejections, hitRatio
        }

        /// Every count, and `hitRatio` (to four decimals) for whoever reads the JSON.
        ///
        ///     let json = try JSONEncoder().encode(counters)
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            for (key, value) in [(CodingKeys.hits, hits), (.misses, misses), (.memoryHits, memoryHits), (.bytesRead, bytesRead),
                                 (.bytesWritten, bytesWritten), (.sets, sets), (.deduplicatedSets, deduplicatedSets),
                                 (.evictions, evictions), (.expirations, expirations), (.corruptReads, corruptReads),
                                 (.journalCompactions, journalCompactions), (.packCollections, packCollections),
                                 (.contentCollisions, contentCollisions), (.remoteRejections, remoteRejections)] {
                try container.encode(value, forKey: key)
            }
            try container.encode((hitRatio * 10_000).rounded() / 10_000, forKey: .hitRatio)
        }

        /// Decodes counts saved by any version: a count the file does not hold (written before it
        /// was kept) is zero.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            func count(_ key: CodingKeys) throws -> Int { try container.decodeIfPresent(Int.self, forKey: key) ?? 0 }
            self.init()
            hits = try count(.hits)
            misses = try count(.misses)
            memoryHits = try count(.memoryHits)
            bytesRead = try count(.bytesRead)
            bytesWritten = try count(.bytesWritten)
            sets = try count(.sets)
            deduplicatedSets = try count(.deduplicatedSets)
            evictions = try count(.evictions)
            expirations = try count(.expirations)
            corruptReads = try count(.corruptReads)
            journalCompactions = try count(.journalCompactions)
            packCollections = try count(.packCollections)
            contentCollisions = try count(.contentCollisions)
            remoteRejections = try count(.remoteRejections)
        }
    }

    /// Sizes and counts of what the cache holds.
    ///
    ///     let totals = cache.totals
    ///     print(totals.entries, totals.storedBytes)
    public struct Totals: Sendable, Equatable, Codable {
        /// Live entries (keys, and content-addressed entries).
        public var entries: Int
        /// Distinct blobs (each stored once, however many keys share it).
        public var blobs: Int
        /// Bytes of the distinct values.
        public var logicalBytes: Int
        /// Bytes the distinct blobs take on disk, headers included: what the byte cap counts.
        public var storedBytes: Int
        /// Bytes of every entry's value, shared blobs counted once per key.
        public var entryLogicalBytes: Int
        /// Entries that are pinned (never evicted).
        public var pinnedEntries: Int
        /// Bytes of pack records no entry uses any more (reclaimed by pack garbage collection).
        public var deadPackBytes: Int
        /// Size of the journal file.
        public var journalBytes: Int
        /// Records in the journal.
        public var journalRecords: Int
        /// Journal records that no longer describe a live entry.
        public var redundantJournalRecords: Int
        /// The limits in force.
        public var limits: Limits
        /// Lifetime operation counts.
        public var counters: Counters

        /// logical / stored bytes (1 when empty).
        public var compressionRatio: Double { storedBytes == 0 ? 1 : Double(logicalBytes) / Double(storedBytes) }
        /// Bytes not stored thanks to content addressing.
        public var deduplicationSavings: Int { entryLogicalBytes - logicalBytes }
    }

    /// The metadata of one entry.
    public struct EntryInfo: Sendable, Equatable {
        /// The entry's key.
        public var key: String
        /// The id (MD5) of its value.
        public var blobID: BlobID
        /// Bytes of the value.
        public var size: Int
        /// Bytes its blob takes on disk (shared with other keys when they hold the same value).
        public var storedSize: Int
        /// How its blob is stored: `none`, `lz4` or `zlib`.
        public var codec: String
        /// Where its blob lives.
        public var place: BlobPlace
        /// When the value was set.
        public var created: Date
        /// `nil` for never.
        public var expiry: Date?
        /// When it was last read or set.
        public var lastAccess: Date
        /// Whether it is pinned (never evicted, kept by `removeAll()`).
        public var pinned: Bool
    }
}
