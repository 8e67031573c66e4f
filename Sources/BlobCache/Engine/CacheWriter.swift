/// Permission to change the cache state: given only to code that holds `DIR/lock`'s flock and
/// has caught up with other opens (`DirectorySharing.underFlock`). Its changes end through the
/// commit path (`commit`): eviction, the journal records, then the deletions they made safe.
///
///     let removed = try engine.write { $0.removeExpired() }
struct CacheWriter {
    /// The state it may change.
    let state: CacheState

    /// Write access to `state`; the caller holds the flock.
    init(_ state: CacheState) { self.state = state }

    /// A reader that journals its accesses at once (this writer holds the flock).
    var reader: CacheReader { CacheReader(state, deferringAccessesTo: nil) }

    /// Runs `body` and ends it through the commit path (`CacheState.perform`).
    @inline(__always)
    func commit<T>(_ body: () throws -> T) throws -> T { try state.perform(body) }

    /// `CacheReader.beginRead(key:)` that removes an expired entry (a miss) and journals the access.
    func beginRead(key: String) throws -> CacheState.ReadTicket? {
        guard let slot = state.slot(of: key) else {
            state.countMiss(key: key)
            return nil
        }
        let time = state.now()
        guard state.index.entry(at: slot).expiry > time else {
            state.remove(slot: slot, reason: .expired)
            state.countMiss(key: key)
            return nil
        }
        return try state.readEntry(key: key, at: slot, time: time, journalingAccess: true).ticket
    }

    /// Removes `key`'s entry (reason `explicit`); returns whether there was one.
    func removeValue(forKey key: String) -> Bool {
        guard let slot = state.index.slot(of: key) else { return false }
        state.remove(slot: slot, reason: .explicit)
        return true
    }

    /// Removes every entry; pinned ones only when `includingPinned`.
    func removeAll(includingPinned: Bool) { state.removeAll(includingPinned: includingPinned) }

    /// Removes every expired entry; returns how many.
    func removeExpired() -> Int { state.removeExpired() }

    /// Evicts every unpinned entry not used since `cutoff` (nanoseconds); returns how many.
    func evictUnused(before cutoff: Int64) -> Int { state.evictUnused(before: cutoff) }

    /// Sets this open's limits (the commit path evicts down to them).
    func setLimits(_ limits: BlobCache.Limits) { state.limits = limits }

    /// Removes every entry whose raw key starts with the namespace `prefix` (reason `cleared`);
    /// pinned ones only when `includingPinned`.
    func removeNamespace(_ prefix: [UInt8], includingPinned: Bool) {
        // (No local copy of the index: the removals below would then copy its arrays.)
        let slots = state.index.slots { _ in true }.filter { slot in
            (includingPinned || !state.index.entry(at: slot).pinned)
                && state.index.withKeyBytes(at: slot, NamespaceKey.prefix(ofRaw:)) == prefix
        }
        for slot in slots { state.remove(slot: slot, reason: .cleared) }
    }

    /// Caps the bytes of the namespace `prefix` in this open (`nil`: no cap of its own).
    func setNamespaceCap(_ prefix: [UInt8], to maxStoredBytes: Int?) {
        state.namespaceLimits[prefix] = maxStoredBytes
        state.namespacesOverPinned[prefix] = nil
    }

    /// Sets every count to zero: this open's and those saved in `DIR/stats`.
    func resetCounters() throws {
        state.counters = BlobCache.Counters()
        state.savedCounters = BlobCache.Counters()
        try BlobCache.Counters().save(in: state.files, io: state.io)
    }
}
