/// The in-memory index: entries by key, blobs by id with reference counts, and an intrusive
/// doubly linked LRU list over the unpinned entries. Every operation is O(1) (amortised), so
/// eviction never scans or sorts. Not thread-safe: the cache owns it under its lock.
struct CacheIndex {
    struct Entry {
        var key: String
        var blob: BlobID
        var created: Int64
        var expiry: Int64
        var access: Int64
        var pinned: Bool
        /// False when the entry moved in LRU order since the journal last said where it is.
        var orderJournaled: Bool
        var journaledAccess: Int64
        var older: Int32 = -1
        var newer: Int32 = -1
    }

    struct Blob {
        var info: BlobInfo
        var references: Int32
        var pinnedReferences: Int32
    }

    private(set) var entries: [Entry] = []
    private var freeSlots: [Int32] = []
    private(set) var slotOfKey: [String: Int32] = [:]
    private(set) var blobs: [BlobID: Blob] = [:]
    /// Least recently used unpinned entry, and most recently used.
    private(set) var oldest: Int32 = -1
    private(set) var newest: Int32 = -1

    private(set) var logicalBytes = 0
    private(set) var storedBytes = 0
    /// Bytes of blobs at least one pinned entry refers to: what eviction can never free.
    private(set) var pinnedStoredBytes = 0
    private(set) var pinnedEntries = 0
    /// Sum of every entry's value size (shared blobs counted per entry): for dedup savings.
    private(set) var entryLogicalBytes = 0
    /// Live pack bytes per segment (indexed by segment number), to find segments worth collecting.
    private var liveBytesBySegment: [Int] = []
    private(set) var livePackedBytes = 0

    var entryCount: Int { slotOfKey.count }

    /// Makes room for about `count` entries and blobs, so replay does not rehash as it grows.
    mutating func reserveCapacity(_ count: Int) {
        slotOfKey.reserveCapacity(count)
        blobs.reserveCapacity(count)
        entries.reserveCapacity(count)
    }
    var blobCount: Int { blobs.count }

    // MARK: Lookup

    func slot(of key: String) -> Int32? { slotOfKey[key] }
    func entry(at slot: Int32) -> Entry { entries[Int(slot)] }
    func blob(_ id: BlobID) -> Blob? { blobs[id] }

    func record(at slot: Int32) -> EntryRecord {
        let entry = entries[Int(slot)]
        return EntryRecord(key: entry.key, blob: blobs[entry.blob]!.info, pinned: entry.pinned,
                           created: entry.created, expiry: entry.expiry, access: entry.access)
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

    /// Every live slot: pinned entries first, then unpinned ones from least to most recent.
    func journalOrder() -> [Int32] {
        var pinned: [Int32] = []
        for (_, slot) in slotOfKey where entries[Int(slot)].pinned { pinned.append(slot) }
        pinned.sort { entries[Int($0)].access < entries[Int($1)].access }
        return pinned + lruOrder()
    }

    // MARK: Changes

    /// Makes or replaces the entry for `record.key`, as most recently used.
    /// Returns the blob released by the replaced value, if its last reference went.
    @discardableResult
    mutating func upsert(_ record: EntryRecord, orderJournaled: Bool) -> BlobInfo? {
        // Retain first: when the key already holds this blob, releasing the old entry first
        // would drop the blob's last reference and delete it.
        retain(record.blob, pinned: record.pinned)
        let entry = Entry(key: record.key, blob: record.blob.id, created: record.created, expiry: record.expiry,
                          access: record.access, pinned: record.pinned, orderJournaled: orderJournaled,
                          journaledAccess: record.access)
        let slot: Int32
        if let free = freeSlots.popLast() {
            slot = free
            entries[Int(slot)] = entry
        } else {
            slot = Int32(entries.count)
            entries.append(entry)
        }
        entryLogicalBytes += record.blob.rawLength
        if record.pinned { pinnedEntries += 1 } else { linkNewest(slot) }
        // One hash for the key whether it is new or replaced.
        guard let replaced = slotOfKey.updateValue(slot, forKey: record.key) else { return nil }
        return detach(slot: replaced)
    }

    /// Drops the entry in `slot`; returns its blob if that was the last reference.
    @discardableResult
    mutating func remove(slot: Int32) -> BlobInfo? {
        slotOfKey[entries[Int(slot)].key] = nil
        return detach(slot: slot)
    }

    /// Frees a slot the key map no longer points at: LRU link, counts, blob reference.
    private mutating func detach(slot: Int32) -> BlobInfo? {
        let entry = entries[Int(slot)]
        if entry.pinned { pinnedEntries -= 1 } else { unlink(slot) }
        entryLogicalBytes -= blobs[entry.blob]!.info.rawLength
        entries[Int(slot)].key = ""
        freeSlots.append(slot)
        return release(entry.blob, pinned: entry.pinned)
    }

    /// Marks an entry used at `time` and moves it to the most recent end.
    mutating func touch(slot: Int32, at time: Int64, journaled: Bool) {
        entries[Int(slot)].access = time
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

    /// Records that a blob was rewritten (moved, or re-encoded): new place, codec and size.
    mutating func relocate(_ info: BlobInfo) {
        guard var blob = blobs[info.id] else { return }
        account(blob, sign: -1)
        blob.info = info
        account(blob, sign: 1)
        blobs[info.id] = blob
    }

    private mutating func account(_ blob: Blob, sign: Int) {
        storedBytes += sign * blob.info.footprint
        if blob.pinnedReferences > 0 { pinnedStoredBytes += sign * blob.info.footprint }
        accountPack(blob.info, sign: sign)
    }

    /// Drops every entry (or only unpinned ones); returns the blobs whose last reference went.
    mutating func removeAll(includingPinned: Bool) -> [BlobInfo] {
        var released: [BlobInfo] = []
        for slot in Array(slotOfKey.values) where includingPinned || !entries[Int(slot)].pinned {
            if let blob = remove(slot: slot) { released.append(blob) }
        }
        return released
    }

    // MARK: Private

    private mutating func retain(_ info: BlobInfo, pinned: Bool) {
        // One hash: the default-subscript modify finds or inserts in place.
        let (isNew, pinnedFootprint) = Self.addReference(
            to: &blobs[info.id, default: Blob(info: info, references: 0, pinnedReferences: 0)], pinned: pinned)
        if isNew {
            logicalBytes += info.rawLength
            storedBytes += info.footprint
            accountPack(info, sign: 1)
        }
        pinnedStoredBytes += pinnedFootprint
    }

    /// Counts one more reference; says whether the blob is new, and the footprint that became
    /// pinned (0 unless this is its first pinned reference).
    private static func addReference(to blob: inout Blob, pinned: Bool) -> (isNew: Bool, pinnedFootprint: Int) {
        let isNew = blob.references == 0
        blob.references += 1
        guard pinned else { return (isNew, 0) }
        blob.pinnedReferences += 1
        return (isNew, blob.pinnedReferences == 1 ? blob.info.footprint : 0)
    }

    private mutating func release(_ id: BlobID, pinned: Bool) -> BlobInfo? {
        guard var blob = blobs[id] else { return nil }
        blob.references -= 1
        if pinned {
            blob.pinnedReferences -= 1
            if blob.pinnedReferences == 0 { pinnedStoredBytes -= blob.info.footprint }
        }
        guard blob.references == 0 else {
            blobs[id] = blob
            return nil
        }
        blobs[id] = nil
        logicalBytes -= blob.info.rawLength
        storedBytes -= blob.info.footprint
        accountPack(blob.info, sign: -1)
        return blob.info
    }

    /// Bytes of live records in pack segment `number`.
    func liveBytes(inSegment number: UInt32) -> Int {
        Int(number) < liveBytesBySegment.count ? liveBytesBySegment[Int(number)] : 0
    }

    private mutating func accountPack(_ info: BlobInfo, sign: Int) {
        guard case .packed(let segment, _) = info.place else { return }
        if Int(segment) >= liveBytesBySegment.count {
            liveBytesBySegment.append(contentsOf: repeatElement(0, count: Int(segment) + 1 - liveBytesBySegment.count))
        }
        liveBytesBySegment[Int(segment)] += sign * info.footprint
        livePackedBytes += sign * info.footprint
    }

    private mutating func linkNewest(_ slot: Int32) {
        entries[Int(slot)].older = newest
        entries[Int(slot)].newer = -1
        if newest >= 0 { entries[Int(newest)].newer = slot } else { oldest = slot }
        newest = slot
    }

    private mutating func unlink(_ slot: Int32) {
        let older = entries[Int(slot)].older, newer = entries[Int(slot)].newer
        if older >= 0 { entries[Int(older)].newer = newer } else { oldest = newer }
        if newer >= 0 { entries[Int(newer)].older = older } else { newest = older }
        entries[Int(slot)].older = -1
        entries[Int(slot)].newer = -1
    }
}
