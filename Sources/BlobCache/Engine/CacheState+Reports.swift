/// The figures the facade reports, as the state has them: totals, an entry's metadata, and
/// the counts.
extension CacheState {
    func totals() -> BlobCache.Totals {
        BlobCache.Totals(
            entries: index.entryCount, blobs: index.blobCount, logicalBytes: index.logicalBytes,
            storedBytes: index.storedBytes, entryLogicalBytes: index.entryLogicalBytes,
            pinnedEntries: index.pinnedEntries, deadPackBytes: deadPackBytes, journalBytes: Int(journal.size),
            journalRecords: journal.recordCount, redundantJournalRecords: redundantRecords,
            limits: limits, counters: lifetimeCounters)
    }

    func info(at slot: Int32) -> BlobCache.EntryInfo {
        let entry = index.entry(at: slot)
        let blob = index.blob(at: entry.blob).info
        return BlobCache.EntryInfo(
            key: index.key(at: slot), blobID: blob.id, size: blob.rawLength, storedSize: blob.footprint,
            codec: blob.codec.name, place: blob.place, created: Nanoseconds.date(entry.created),
            expiry: entry.expiry == Nanoseconds.never ? nil : Nanoseconds.date(entry.expiry),
            lastAccess: Nanoseconds.date(entry.access), pinned: entry.pinned)
    }
}

extension CacheState {
    /// This open's counts and the lifetime ones.
    var statistics: BlobCache.Statistics {
        BlobCache.Statistics(sinceOpen: counters, lifetime: lifetimeCounters)
    }
}
