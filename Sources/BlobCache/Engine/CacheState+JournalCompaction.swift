import SystemPackage

extension CacheState {
    // MARK: Journal compaction

    /// Records in the journal that no longer describe a live entry.
    var redundantRecords: Int { max(0, journal.recordCount - index.entryCount) }

    /// About the bytes a rewritten journal takes: one `set` record per live entry.
    var compactedJournalBytes: Int {
        JournalFormat.headerSize + index.entryCount * Self.setRecordOverhead + index.liveKeyBytes
    }

    /// A `set` record's bytes besides its key (frame, blob, times, flags), rounded up.
    static let setRecordOverhead = 96

    /// Journal bytes beyond twice a compacted journal that are tolerated before a rewrite
    /// (which costs two fsyncs): 1 MiB, or an eighth of a smaller byte cap (at least 16 KiB),
    /// so that a small cache's directory stays close to its cap (docs/RELIABILITY.md).
    var journalSlack: Int { Self.allowance(cap: limits.maxStoredBytes, fraction: 8) }

    /// `min(1 MiB, max(16 KiB, cap / fraction))`; 1 MiB without a cap.
    static func allowance(cap: Int?, fraction: Int) -> Int {
        guard let cap else { return 1 << 20 }
        return min(1 << 20, max(16 << 10, cap / fraction))
    }

    /// Whether the journal is more than twice its compacted size plus the slack (and past the
    /// size a failed rewrite left it at). Readers wait for twice that (`reader`), so that in a
    /// cache with writers a writer does the rewrite, not a `get`; a process that only reads
    /// adds an access record per entry per `accessJournalInterval` at most, so its journal
    /// stays within that larger bound.
    func journalIsRedundant(reader: Bool = false) -> Bool {
        journal.size > (reader ? 2 * journalRewriteThreshold : journalRewriteThreshold)
    }

    /// The journal size past which a writer rewrites it (see `journalIsRedundant`).
    var journalRewriteThreshold: Int64 { max(Int64(2 * compactedJournalBytes + journalSlack), journalCompactionBackoff) }

    /// Rewrites the journal (under the lock) when it is redundant; see `journalIsRedundant`.
    func compactJournalIfRedundant() throws {
        guard journalIsRedundant() else { return }
        do {
            try compactJournal()
            journalCompactionBackoff = 0
        } catch {
            noteFailedJournalRewrite()
            throw error
        }
    }

    /// Rewrites the journal to one `set` record per live entry, in LRU order (docs/FORMAT.md),
    /// all under the lock (compact, close, open).
    func compactJournal() throws {
        let rewrite = try beginJournalRewrite()
        let replacement = try rewrite.prepare()
        try finishJournalRewrite(rewrite, replacement: replacement)
        if !journal.synchronous { try journal.syncInstalledReplacement(replacement) }
    }

    // MARK: Rewrite outside the lock

    /// A journal rewrite taken apart: a copy of the index is taken under the lock
    /// (`beginJournalRewrite`), the records written and fsynced outside it (`prepare`), and the
    /// file installed under it again with whatever was journaled in between (`finishJournalRewrite`).
    ///
    /// `@unchecked Sendable`: `index` is a copy-on-write copy that nothing writes (the engine's
    /// next change copies the arrays it touches first), so reading it on another thread is safe.
    struct JournalRewrite: @unchecked Sendable {
        let index: CacheIndex
        /// The journal's size when the copy was taken.
        let mark: Int64
        let created: Int64
        let path: CachePath
        let io: FileIO
        /// What the records are sealed under (the journal's own cipher, or a new key's).
        let cipher: CacheCipher?

        /// Writes one `set` record per live entry, in journal order (pinned entries first, then
        /// least to most recently used), to `journal.tmp` and fsyncs it.
        func prepare() throws -> JournalFile.Replacement {
            let records = index.journalOrder().map { JournalRecord.set(index.record(at: $0)) }
            return try JournalFile.prepareReplacement(of: path, records: records, created: created, io: io, cipher: cipher)
        }
    }

    /// Takes what a compacted journal will hold: the index as it stands (a copy-on-write copy,
    /// O(1) here; the next change pays one copy of the arrays it touches), every entry marked
    /// `unmovedSinceRewrite`.
    func beginJournalRewrite() throws -> JournalRewrite {
        try journal.flush()
        index.markAllTakenByRewrite()
        return JournalRewrite(index: index, mark: journal.size, created: now(), path: journal.path, io: io,
                              cipher: journal.cipher)
    }

    /// Installs a rewritten journal (with the records written since `rewrite` began), deletes
    /// the snapshot (it describes the old journal), and marks journaled the entries not used
    /// since. Unless synchronous, the caller then makes it durable (`Replacement.makeDurable`).
    func finishJournalRewrite(_ rewrite: JournalRewrite, replacement: JournalFile.Replacement) throws {
        try journal.install(replacement, recordsSince: rewrite.mark)
        try deleteSnapshot()
        index.markJournaledIfUnmoved()
        counters.journalCompactions += 1
        journalCompactionBackoff = 0
    }

    /// Remembers a rewrite that failed: none is tried again until the journal grows by
    /// another slack.
    func noteFailedJournalRewrite() {
        #if BLOBCACHE_TESTING
        maintenanceFailures += 1
        #endif
        journalCompactionBackoff = journal.size + Int64(journalSlack)
    }
}
