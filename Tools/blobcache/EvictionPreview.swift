import BlobCache

/// What lowering the caps would evict, counted the way the cache evicts: least recently used
/// first, pinned entries never, and a blob's bytes freed with the last entry that uses it.
///
///     let preview = EvictionPreview(entries: try cache.entries(), storedBytes: totals.storedBytes, limits: lower)
///     if preview.entries > 0 { … }
struct EvictionPreview {
    /// Entries that would be evicted.
    private(set) var entries = 0
    /// Stored bytes those evictions would free.
    private(set) var bytes = 0

    /// `list`: every entry, least recently used first (`BlobCache.entries()`).
    init(entries list: [BlobCache.EntryInfo], storedBytes: Int, limits: BlobCache.Limits) {
        var references: [BlobID: Int] = [:]
        for entry in list { references[entry.blobID, default: 0] += 1 }
        var count = list.count, stored = storedBytes
        func over() -> Bool {
            count > (limits.maxEntries ?? .max) || stored > (limits.maxStoredBytes ?? .max)
        }
        for entry in list where !entry.pinned {
            guard over() else { break }
            count -= 1
            entries += 1
            references[entry.blobID, default: 1] -= 1
            if references[entry.blobID] == 0 {
                stored -= entry.storedSize
                bytes += entry.storedSize
            }
        }
    }
}
