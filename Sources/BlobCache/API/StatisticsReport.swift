extension BlobCache {
    /// The cache's figures in one schema (docs/statistics.schema.json): what
    /// `blobcache stat --json` prints and `blobcache serve` answers to `GET /status`, so a
    /// script reads both the same way. `schemaVersion` changes only when a field changes
    /// meaning or goes away; new fields may appear within a version.
    ///
    ///     let report = try cache.statisticsReport()
    ///     print(report.lifetime.hitRatio, report.storedBytes)
    public struct StatisticsReport: Codable, Sendable, Equatable {
        /// The schema this type encodes.
        public static let currentSchemaVersion = 1

        /// Always `currentSchemaVersion` when written by this release.
        public var schemaVersion = StatisticsReport.currentSchemaVersion
        /// The cache directory as it was given (`serve` leaves it out).
        public var directory: String?
        /// Live entries, keyed and content-addressed.
        public var entries: Int
        /// Distinct blobs.
        public var blobs: Int
        /// Bytes of the distinct values.
        public var logicalBytes: Int
        /// Bytes the distinct blobs take on disk, headers included: what the byte cap counts.
        public var storedBytes: Int
        /// logicalBytes / storedBytes (1 when empty), to three decimals.
        public var compressionRatio: Double
        /// Bytes not stored because entries share blobs.
        public var deduplicationSavings: Int
        /// Bytes of pack records no entry uses (reclaimed by pack garbage collection).
        public var deadPackBytes: Int
        /// The journal: its size, records, and records that no longer describe a live entry.
        public var journal: Journal
        /// The caps in force; `null` for none.
        public var limits: Caps
        /// Counts since this open.
        public var sinceOpen: Counters
        /// Counts over the cache's life (every open that closed cleanly, and this one).
        public var lifetime: Counters
        /// What the remote tier did since this open (all zero without one).
        public var remote: RemoteCounters
        /// Each namespace's figures, by name.
        public var namespaces: [String: Namespace.Totals]
        /// The figures of the `serve` process answering, when one does.
        public var server: Server?

        /// The journal's figures.
        public struct Journal: Codable, Sendable, Equatable {
            /// Size of the journal file.
            public var bytes: Int
            /// Records in it.
            public var records: Int
            /// Records that no longer describe a live entry (compaction drops them).
            public var redundantRecords: Int
        }

        /// The caps; encoded as `null` when absent (never left out).
        public struct Caps: Codable, Sendable, Equatable {
            /// The byte cap, if any.
            public var maxSize: Int?
            /// The entry cap, if any.
            public var maxEntries: Int?

            /// Both caps, `null` included.
            ///
            ///     try caps.encode(to: encoder)
            public func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(maxSize, forKey: .maxSize)
                try container.encode(maxEntries, forKey: .maxEntries)
            }

            private enum CodingKeys: String, CodingKey { case maxSize, maxEntries }
        }

        /// A `serve` process's own figures.
        public struct Server: Codable, Sendable, Equatable {
            /// The address it listens on.
            public var listen: String
            /// The largest request body it takes.
            public var maxBodyBytes: Int
            /// Requests answered since it started.
            public var requests: Int

            /// The figures of a server.
            ///
            ///     let server = BlobCache.StatisticsReport.Server(listen: "127.0.0.1:8080", maxBodyBytes: 1 << 28, requests: 0)
            public init(listen: String, maxBodyBytes: Int, requests: Int) {
                (self.listen, self.maxBodyBytes, self.requests) = (listen, maxBodyBytes, requests)
            }
        }
    }

    /// The cache's figures now, in the one schema `stat --json` and `GET /status` share.
    ///
    ///     let json = try JSONEncoder().encode(try cache.statisticsReport())
    public func statisticsReport() throws -> StatisticsReport {
        let totals = try totals()
        let namespaces = try namespaceTotals()
        let statistics = statistics()
        return StatisticsReport(
            directory: directory, entries: totals.entries, blobs: totals.blobs, logicalBytes: totals.logicalBytes,
            storedBytes: totals.storedBytes, compressionRatio: (totals.compressionRatio * 1000).rounded() / 1000,
            deduplicationSavings: totals.deduplicationSavings, deadPackBytes: totals.deadPackBytes,
            journal: .init(bytes: totals.journalBytes, records: totals.journalRecords, redundantRecords: totals.redundantJournalRecords),
            limits: .init(maxSize: totals.limits.maxStoredBytes, maxEntries: totals.limits.maxEntries),
            sinceOpen: statistics.sinceOpen, lifetime: statistics.lifetime, remote: statistics.remote, namespaces: namespaces)
    }
}
