/// Which entries a cache over its limits evicts first.
///
/// Both keep one list of the unpinned entries in the index and evict from its old end in O(1),
/// and both survive a restart: the journal and the index snapshot keep the order, and the
/// segmented policy's protected entries too.
///
///     var configuration = BlobCache.Configuration()
///     configuration.eviction = .lru
public enum EvictionPolicy: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Least recently used first. Every use moves an entry to the new end, so a scan of values
    /// used once (a batch job, a crawler) pushes out the ones used all the time.
    ///
    ///     configuration.eviction = .lru
    case lru

    /// Segmented LRU (the default): an entry used again after it was stored is protected, and
    /// protected entries (at most half of them) are evicted only after every unprotected one.
    /// New entries wait in probation, so values used once leave before values used twice: a
    /// scan evicts only its own kind. When the protected half is full, its least recently
    /// used entry drops back to probation, so a working set that moves on is followed.
    ///
    ///     configuration.eviction = .segmentedLRU
    case segmentedLRU

    /// `lru` or `segmentedLRU`.
    public var description: String { rawValue }
}
