import SystemPackage

extension CacheEngine {
    // MARK: Expiry

    /// Removes every entry whose expiry has passed; returns how many.
    @discardableResult
    func removeExpired() -> Int {
        let time = now()
        let expired = index.slots { $0.expiry <= time }
        for slot in expired { remove(slot: slot, reason: .expired) }
        return expired.count
    }

    /// Removes every entry (pinned ones only when asked).
    func removeAll(includingPinned: Bool) {
        index.removeAll(includingPinned: includingPinned).forEach(release)
        journal.append(.removeAll(includingPinned: includingPinned))
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
}
