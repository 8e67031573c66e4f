/// What a read under `Engine.read` comes to: its answer, or the part that must write (an
/// expired entry to drop, limits to enforce), which the engine runs with a `CacheWriter` in
/// the same hold of its lock.
///
///     let ticket = try engine.read { try $0.beginRead(key: key) }   // .write when expired
enum Reading<Value> {
    /// The read is done.
    case answer(Value)
    /// The read must write: run this holding the flock, through the commit path.
    case write((CacheWriter) throws -> Value)
}

/// Permission to read the cache state: look keys and blobs up and mark reads, and nothing
/// that writes a file. Without the flock (`sharing` set) an access due for the journal waits
/// in `DirectorySharing` for the next operation that holds it; a writer's reader journals it.
/// Whatever must write is returned as `Reading.write`.
///
///     let keys = try engine.read { .answer($0.keys()) }
struct CacheReader {
    fileprivate let state: CacheState
    /// Where accesses due for the journal wait; `nil` under the flock.
    private let sharing: DirectorySharing?

    /// A reader without the flock: its accesses wait in `sharing`.
    init(_ state: CacheState, deferringAccessesTo sharing: DirectorySharing?) {
        self.state = state
        self.sharing = sharing
    }

    /// Looks `key` up for reading: a miss for absent keys, else marks the access and returns
    /// where the bytes are. An expired entry (to remove) or limits exceeded (to enforce, after
    /// another open's records were taken in) make it a `.write`.
    @inline(__always)
    func beginRead(key: String) throws -> Reading<CacheState.ReadTicket?> {
        if state.isOverLimits || state.isOverNamespaceLimits { return .write { try $0.beginRead(key: key) } }
        guard let slot = state.slot(of: key) else {
            state.countMiss(key: key)
            return .answer(nil)
        }
        let time = state.now()
        guard state.index.entry(at: slot).expiry > time else { return .write { try $0.beginRead(key: key) } }
        let (ticket, accessDue) = try state.readEntry(key: key, at: slot, time: time, journalingAccess: sharing == nil)
        if accessDue { sharing?.deferAccess(key: key, time: time) }
        return .answer(ticket)
    }

    /// Looks a blob up by id for reading.
    func beginRead(id: BlobID) throws -> CacheState.ReadTicket? { try state.beginRead(id: id) }

    /// Whether `key` holds an unexpired entry.
    func holds(_ key: String) -> Bool { state.holds(key) }

    /// Whether the index holds the blob `id` names.
    func holdsBlob(_ id: BlobID) -> Bool { state.index.blob(id) != nil }

    /// The metadata of `key`'s unexpired entry.
    func entry(forKey key: String) -> BlobCache.EntryInfo? {
        guard let slot = state.index.slot(of: key), state.index.entry(at: slot).expiry > state.now() else { return nil }
        return state.info(at: slot)
    }

    /// The metadata of every entry whose raw key passes `include`, least recently used first.
    func entries(where include: (UnsafeRawBufferPointer) -> Bool = { _ in true }) -> [BlobCache.EntryInfo] {
        state.index.journalOrder().compactMap { slot in state.index.withKeyBytes(at: slot, include) ? state.info(at: slot) : nil }
    }

    /// Every raw key of a keyed entry (not content-addressed), least recently used first.
    func keys() -> [String] {
        state.index.journalOrder().map { state.index.key(at: $0) }.filter { !$0.hasPrefix(BlobCache.contentAddressedKeyPrefix) }
    }

    /// Sizes, counts, limits and lifetime counters.
    func totals() -> BlobCache.Totals { state.totals() }

    /// What the namespace with raw key `prefix` holds, and its cap in this open.
    func namespaceUsage(_ prefix: [UInt8]) -> (usage: NamespaceLedger.Usage?, cap: Int?) {
        (state.index.namespaces.usage[prefix], state.namespaceLimits[prefix])
    }

    /// Every namespace's usage and cap in this open, by raw key prefix.
    func namespaceUsages() -> [(prefix: [UInt8], usage: NamespaceLedger.Usage, cap: Int?)] {
        state.index.namespaces.usage.map { ($0.key, $0.value, state.namespaceLimits[$0.key]) }
    }

    /// The byte cap of this open (`Limits.maxStoredBytes`).
    var maxStoredBytes: Int? { state.limits.maxStoredBytes }

    /// The most a value stored under `key` may take: the byte cap, or the key's namespace's
    /// cap in this open when that is lower.
    func storedBytesLimit(forKey key: String) -> Int? {
        let caps = [state.limits.maxStoredBytes, NamespaceKey.prefix(ofRawKey: key).flatMap { state.namespaceLimits[$0] }]
        return caps.compactMap { $0 }.min()
    }

    /// A read of `key` answered from the snapshot while the restore is deferred
    /// (`CacheState.readBeforeRestore`), when no other open wrote since.
    func readBeforeRestore(key: String) throws -> CacheState.EarlyRead {
        try state.readBeforeRestore(key: key, current: sharing?.isCurrent ?? false)
    }

    /// Whether no blob was released since `releases` (a ticket's), here or in another open:
    /// the index caught up with every committed record, no writer inside, and the state's
    /// `releases` unmoved. Catches up without the flock when it can, but does not finish a
    /// deferred restore (nothing local is released before one).
    func nothingReleased(since releases: UInt64) -> Bool {
        guard let sharing else { return false }
        if !sharing.isCurrent, state.pendingRestore == nil { _ = sharing.catchUpWithoutLock() }
        return sharing.isCurrent && state.releases == releases
    }

    /// The value of `key` when the memory tier holds it and that needs no file I/O and no
    /// flock: the index current and restored, the entry unexpired, no accesses due for the
    /// journal, the limits kept. Counts the hit.
    func rememberedValue(forKey key: String) -> [UInt8]? {
        guard let sharing, state.pendingRestore == nil, sharing.isCurrent, !sharing.pendingAccessesDue,
              !state.isOverLimits, !state.isOverNamespaceLimits, let slot = state.slot(of: key) else { return nil }
        let entry = state.index.entry(at: slot), time = state.now()
        guard entry.expiry > time, state.memory.contains(state.index.blob(at: entry.blob).id) else { return nil }
        guard let (ticket, accessDue) = try? state.readEntry(key: key, at: slot, time: time, journalingAccess: false) else {
            return nil
        }
        if accessDue { sharing.deferAccess(key: key, time: time) }
        return ticket.value
    }

    /// Offers a value just read from disk to the memory tier, kept only while its blob is
    /// stored: not when any blob was released since its ticket (`releases`), since the id may
    /// name another value with the same MD5 by now. (The tier is memory, not the cache's files.)
    func remember(_ value: [UInt8], id: BlobID, releases: UInt64) {
        // Before the restore nothing can have been removed since the read began.
        guard state.releases == releases, state.memory.admits(size: value.count),
              state.pendingRestore != nil || state.index.blob(id) != nil else { return }
        state.memory.insert(value, for: id)
    }
}
