import SystemPackage

extension CacheState {
    // MARK: Expiry

    /// Removes every entry whose expiry has passed; returns how many.
    @discardableResult
    func removeExpired() -> Int {
        let time = now()
        let expired = index.expiredSlots(at: time)
        for slot in expired { remove(slot: slot, reason: .expired) }
        return expired.count
    }

    /// Evicts every unpinned entry last read or written before `cutoff` (nanoseconds since
    /// 1970), as the size cap would (an expired one counts as expired); returns how many.
    func evictUnused(before cutoff: Int64) -> Int {
        let time = now()
        let stale = index.liveSlots.filter { slot in
            let entry = index.entry(at: slot)
            return !entry.pinned && entry.access < cutoff
        }
        for slot in stale { remove(slot: slot, reason: index.entry(at: slot).expiry <= time ? .expired : .evicted) }
        return stale.count
    }

    /// Removes every entry (pinned ones only when asked).
    func removeAll(includingPinned: Bool) {
        noteClearing(includingPinned: includingPinned)
        index.removeAll(includingPinned: includingPinned).forEach(release)
        journal.append(.removeAll(includingPinned: includingPinned))
    }

    /// Records a `.cleared` change for each entry a remove-all is about to drop (when observed).
    func noteClearing(includingPinned: Bool) {
        guard recordsChanges else { return }
        for slot in index.liveSlots where includingPinned || !index.entry(at: slot).pinned {
            madeChanges.append(.removed(key: index.key(at: slot), reason: .cleared))
        }
    }

    /// Applies a record another open wrote (catch-up replay); `false` when the index cannot
    /// take it (see `CacheIndex.apply`). A blob it releases leaves the memory tier, as one
    /// released here does (`release`): its id may name another value next.
    func applyReplayed(_ record: JournalRecord) -> Bool {
        var displaced: BlobID?
        switch record {
        case .set(let entry): displaced = index.slot(of: entry.key).map { index.blob(ofEntry: $0).id }
        case .remove(let key, _): displaced = index.slot(of: key).map { index.blob(ofEntry: $0).id }
        default: break
        }
        guard applyReplayedRecord(record) else { return false }
        if case .removeAll = record {
            memory.removeAll()
            releases &+= 1
        } else if let displaced, index.blob(displaced) == nil {
            memory.remove(displaced)
            releases &+= 1
        }
        return true
    }

    /// `applyReplayed`'s change to the index, recording the change it makes when observed.
    private func applyReplayedRecord(_ record: JournalRecord) -> Bool {
        guard recordsChanges else { return index.apply(record) }
        switch record {
        case .set(let entry):
            guard index.apply(record) else { return false }
            madeChanges.append(.set(key: entry.key, id: entry.blob.id))
        case .remove(let key, let reason):
            let held = index.slot(of: key) != nil
            guard index.apply(record) else { return false }
            if held { madeChanges.append(.removed(key: key, reason: reason)) }
        case .removeAll(let includingPinned):
            guard index.admits(record) else { return false }
            noteClearing(includingPinned: includingPinned)
            return index.apply(record)
        case .access, .relocate:
            return index.apply(record)
        }
        return true
    }

    // MARK: Close

    /// Writes what the journal does not yet know of recency, so a clean close keeps LRU order
    /// exactly: access records for every entry from the first one that moved unjournaled to the
    /// most recent (and for pinned entries whose access time is newer than the journal's).
    func persistRecency() throws {
        var writing = false
        var cursor = index.oldest
        while cursor >= 0 {
            let entry = index.entry(at: cursor)
            if !entry.orderJournaled || entry.access != entry.journaledAccess { writing = true }
            if writing {
                journal.append(.access(key: index.key(at: cursor), time: entry.access))
                index.markJournaled(slot: cursor)
            }
            cursor = entry.newer
        }
        for slot in index.slots(where: { $0.pinned && $0.access != $0.journaledAccess }) {
            journal.append(.access(key: index.key(at: slot), time: index.entry(at: slot).access))
            index.markJournaled(slot: slot)
        }
        try journal.flush()
    }

    /// A clean close's writes, under the flock: the recency of this open's reads (as access
    /// records while the restore is still deferred, else `persistRecency`), the journal
    /// synced, a snapshot when worth it, the counts saved.
    func closeCleanly() throws {
        if pendingRestore != nil {
            journalReadsBeforeRestore()
            try journal.flush()
        } else {
            try persistRecency()
            try? compactJournalIfRedundant()
        }
        try journal.sync()
        writeSnapshotIfWorthIt()
        try? saveCounters()
    }
}
