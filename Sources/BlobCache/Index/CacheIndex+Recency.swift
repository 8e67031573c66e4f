// The LRU list: the unpinned entries, linked through their own records from `oldest` to
// `newest`, so that a use moves an entry in O(1) and eviction takes from one end without a
// scan; and, per entry, whether the journal already knows its place and last access.
//
// Segmented (`segmented`, `EvictionPolicy.segmentedLRU`): the same list in two parts. The
// entries used again since they were stored (protected) are its newest end, from
// `protectedOldest` on, and at most half the unpinned entries; the others (probation) are
// below them. A new entry joins probation at its newest end, a used one moves to the newest
// end of the list and is protected, and when the protected part outgrows its half its oldest
// entry drops back to the newest end of probation, where it is: one pointer moves. Eviction
// still takes the oldest entry, so a scan of values used once evicts only its own kind.
extension CacheIndex {
    /// Marks an entry used at `time` and moves it to the most recent end (protected, when
    /// segmented).
    mutating func touch(slot: Int32, at time: Int64, journaled: Bool) {
        entries[Int(slot)].access = time
        entries[Int(slot)].unmovedSinceRewrite = false
        let stays = newest == slot && (!segmented || entries[Int(slot)].isProtected)
        if journaled {
            entries[Int(slot)].journaledAccess = time
            entries[Int(slot)].orderJournaled = true
        } else if !entries[Int(slot)].pinned && !stays {
            entries[Int(slot)].orderJournaled = false
        }
        guard !entries[Int(slot)].pinned, !stays else { return }
        unlink(slot)
        if segmented { linkProtected(slot) } else { linkNewest(slot) }
    }

    /// Links a new unpinned entry: the newest end of the list, or of probation when segmented
    /// (protected when `used`: a rewrite's record of a protected entry, or a value replacing
    /// one the key held).
    mutating func linkStored(_ slot: Int32, used: Bool) {
        guard segmented else { return linkNewest(slot) }
        lastStored = slot
        if used { return linkProtected(slot) }
        guard protectedOldest >= 0 else { return linkNewest(slot) }
        let newer = protectedOldest, older = entries[Int(newer)].older
        entries[Int(slot)].older = older
        entries[Int(slot)].newer = newer
        entries[Int(newer)].older = slot
        if older >= 0 { entries[Int(older)].newer = slot } else { oldest = slot }
    }

    /// Links `slot` at the newest end as protected, then keeps the protected part within half
    /// the unpinned entries by moving its boundary.
    private mutating func linkProtected(_ slot: Int32) {
        linkNewest(slot)
        entries[Int(slot)].isProtected = true
        protectedEntries += 1
        if protectedOldest < 0 { protectedOldest = slot }
        keepProtectedWithinHalf()
    }

    /// Drops the oldest protected entries back to probation (where they stand) while they are
    /// more than half the unpinned entries.
    private mutating func keepProtectedWithinHalf() {
        while protectedEntries * 2 > entryCount - pinnedEntries, protectedOldest >= 0 {
            entries[Int(protectedOldest)].isProtected = false
            protectedEntries -= 1
            protectedOldest = entries[Int(protectedOldest)].newer
        }
    }

    /// The entry to evict next: the oldest, except that under the segmented LRU the entry the
    /// last set stored (which joined probation below the protected entries, and may be the
    /// oldest once probation is gone) is passed over for the one after it, so that no set
    /// evicts its own value while another can go; when it is the only one, it goes (the caps
    /// are hard, as under LRU). -1: none.
    var evictionCandidate: Int32 {
        guard segmented, oldest >= 0, oldest == lastStored, entries[Int(oldest)].newer >= 0 else { return oldest }
        return entries[Int(oldest)].newer
    }

    /// Turns segmenting on or off; off, every entry is in probation (the list's order kept).
    mutating func useSegments(_ on: Bool) {
        segmented = on
        if on { orderFromSegments = true }
        guard !on else { return }
        var cursor = protectedOldest
        while cursor >= 0 {
            entries[Int(cursor)].isProtected = false
            cursor = entries[Int(cursor)].newer
        }
        protectedOldest = -1
        protectedEntries = 0
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
        if protectedOldest == slot { protectedOldest = newer }
        if entries[Int(slot)].isProtected {
            entries[Int(slot)].isProtected = false
            protectedEntries -= 1
        }
        if lastStored == slot { lastStored = -1 }
        // A removal can leave the protected entries more than half: probation must not run
        // dry while they fill the cache.
        if segmented { keepProtectedWithinHalf() }
        if older >= 0 { entries[Int(older)].newer = newer } else { oldest = newer }
        if newer >= 0 { entries[Int(newer)].older = older } else { newest = older }
        entries[Int(slot)].older = -1
        entries[Int(slot)].newer = -1
    }
}
