// The LRU list: the unpinned entries, linked through their own records from `oldest` to
// `newest`, so that a use moves an entry in O(1) and eviction takes from one end without a
// scan; and, per entry, whether the journal already knows its place and last access.
extension CacheIndex {
    /// Marks an entry used at `time` and moves it to the most recent end.
    mutating func touch(slot: Int32, at time: Int64, journaled: Bool) {
        entries[Int(slot)].access = time
        entries[Int(slot)].unmovedSinceRewrite = false
        if journaled {
            entries[Int(slot)].journaledAccess = time
            entries[Int(slot)].orderJournaled = true
        } else if !entries[Int(slot)].pinned && newest != slot {
            entries[Int(slot)].orderJournaled = false
        }
        guard !entries[Int(slot)].pinned, newest != slot else { return }
        unlink(slot)
        linkNewest(slot)
    }

    /// Records that the journal now holds this entry's order and access time.
    mutating func markJournaled(slot: Int32) {
        entries[Int(slot)].orderJournaled = true
        entries[Int(slot)].journaledAccess = entries[Int(slot)].access
    }

    /// Records that the journal now holds an access of this entry at `time` (its order is
    /// left as it is: the record may land after records of entries used since).
    mutating func markAccessJournaled(slot: Int32, at time: Int64) {
        entries[Int(slot)].journaledAccess = time
    }

    /// Notes that a journal rewrite took every live entry's record (see `Entry.unmovedSinceRewrite`).
    mutating func markAllTakenByRewrite() {
        entries.withUnsafeMutableBufferPointer { entries in
            for slot in entries.indices where entries[slot].blob >= 0 { entries[slot].unmovedSinceRewrite = true }
        }
    }

    /// Marks journaled every live entry not used since a rewrite took its record (that rewrite
    /// now being the journal).
    mutating func markJournaledIfUnmoved() {
        entries.withUnsafeMutableBufferPointer { entries in
            for slot in entries.indices where entries[slot].blob >= 0 && entries[slot].unmovedSinceRewrite {
                entries[slot].unmovedSinceRewrite = false
                entries[slot].orderJournaled = true
                entries[slot].journaledAccess = entries[slot].access
            }
        }
    }

    /// Unpinned entries from least to most recently used.
    func lruOrder() -> [Int32] {
        var order: [Int32] = []
        order.reserveCapacity(entryCount - pinnedEntries)
        var cursor = oldest
        while cursor >= 0 {
            order.append(cursor)
            cursor = entries[Int(cursor)].newer
        }
        return order
    }

    /// Every live slot: pinned entries first (oldest access first), then unpinned ones from
    /// least to most recent.
    func journalOrder() -> [Int32] {
        var pinned = slots(where: \.pinned)
        pinned.sort { entries[Int($0)].access < entries[Int($1)].access }
        return pinned + lruOrder()
    }

    mutating func linkNewest(_ slot: Int32) {
        entries[Int(slot)].older = newest
        entries[Int(slot)].newer = -1
        if newest >= 0 { entries[Int(newest)].newer = slot } else { oldest = slot }
        newest = slot
    }

    mutating func unlink(_ slot: Int32) {
        let older = entries[Int(slot)].older, newer = entries[Int(slot)].newer
        if older >= 0 { entries[Int(older)].newer = newer } else { oldest = newer }
        if newer >= 0 { entries[Int(newer)].older = older } else { newest = older }
        entries[Int(slot)].older = -1
        entries[Int(slot)].newer = -1
    }
}
