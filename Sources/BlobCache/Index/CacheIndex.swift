/// The in-memory index: entries by key, blobs by id with reference counts, and an intrusive
/// doubly linked LRU list over the unpinned entries. Every operation is O(1) (amortised), so
/// eviction never scans or sorts. Not thread-safe: the cache owns it under its lock.
///
/// Flat storage: per entry a 56-byte entry record, a 56-byte blob record (when its value is
/// not shared), two 8-byte buckets at up to 80% load, and its key (the Benchmarks runner's
/// `--workloads scale` reports the whole): entries and blobs are plain structs in
/// arrays, keys are UTF-8 in one arena, and two `SlotTable`s map keys and ids to slots. A
/// snapshot (`IndexSnapshot`) restores it without hashing or allocating per entry.
struct CacheIndex {
    // Those not private are internal only for the index's extensions in other files (key
    // arena, LRU links, segment counts): nothing outside `CacheIndex` sets them.

    /// Seeds `KeyHash`; random per cache, kept by snapshots.
    let seed: UInt64
    var entries = FlatArray<Entry>()
    private var freeEntries: [Int32] = []
    var keyArena = FlatArray<UInt8>()
    /// Arena bytes of keys no live entry uses; the arena is compacted when they outweigh the rest.
    var deadKeyBytes = 0
    private(set) var keyTable = SlotTable()
    private(set) var blobs = FlatArray<Blob>()
    private var freeBlobs: [Int32] = []
    private(set) var blobTable = SlotTable()
    /// Least recently used unpinned entry, and most recently used.
    var oldest: Int32 = -1
    var newest: Int32 = -1
    /// Whether used entries are protected (`EvictionPolicy.segmentedLRU`): set only by
    /// `init(segmented:)` and `useSegments` (internal for that extension).
    var segmented = false
    /// The oldest protected entry (-1: none): the protected are it and every newer one.
    var protectedOldest: Int32 = -1
    var protectedEntries = 0
    /// The entry the last set linked (-1: none, or gone): see `evictionCandidate`.
    var lastStored: Int32 = -1
    /// Whether the list's order may be a segmented LRU's (this index was segmented at some
    /// point, or restored from a snapshot that was): a journal replayed as LRU may then
    /// disagree with it, which a snapshot's header says.
    var orderFromSegments = false

    private(set) var logicalBytes = 0
    private(set) var storedBytes = 0
    /// Bytes of blobs at least one pinned entry refers to: what eviction can never free.
    private(set) var pinnedStoredBytes = 0
    private(set) var pinnedEntries = 0
    /// Sum of every entry's value size (shared blobs counted per entry): for dedup savings.
    private(set) var entryLogicalBytes = 0
    /// Live pack bytes per segment, to find segments worth collecting: an array indexed by
    /// segment number for the numbers a store uses first, a dictionary beyond (so a damaged
    /// record naming segment 2^24 does not make an array of 2^24 counters).
    var liveBytesBySegment: [Int] = []
    var liveBytesOfHighSegments = [UInt32: Int]()   // not `[:]`, whose initializer instantiates the storage type
    var livePackedBytes = 0
    /// No live entry expires before this time: a lower bound that entries lower as they come
    /// and `expiredSlots(at:)` makes exact again, so that finding none expired costs no scan.
    private(set) var earliestExpiry = Int64.max
    /// What each namespace holds (its byte cap and `totals()` read it).
    private(set) var namespaces = NamespaceLedger()

    init(seed: UInt64 = UInt64.random(in: 0...UInt64.max)) { self.seed = seed }

    /// An empty index that protects used entries when `segmented` (its replays do as well).
    ///
    ///     var index = CacheIndex(segmented: true)
    init(segmented: Bool) {
        self.init()
        self.segmented = segmented
        orderFromSegments = segmented
    }

    /// The records of an index as a snapshot keeps them: no free slots, links and reference
    /// counts as they were. (Its two tables are checked apart, by `SlotTable(buckets:slotCount:)`,
    /// and given to the index by `adopt`.)
    struct Parts {
        var entries: FlatArray<Entry>
        var blobs: FlatArray<Blob>
        var keyArena: FlatArray<UInt8>
        var oldest: Int32
        var newest: Int32
        /// Whether the index that wrote them protected used entries.
        var segmented = false
    }

    /// An index from a snapshot's records, taken as they are (they may lie in a mapped file, so
    /// nothing here writes to them). Only the totals are recomputed, in read-only passes that
    /// also check every link, reference and key range; `nil` when they do not make a
    /// consistent index. Safe on damaged bytes (it may run while their hash is still being
    /// checked). Its tables are empty until `adopt(keyTable:blobTable:)` gives it the snapshot's.
    init?(seed: UInt64, restoring parts: consuming Parts) {
        self.seed = seed
        entries = parts.entries
        blobs = parts.blobs
        keyArena = parts.keyArena
        oldest = parts.oldest
        newest = parts.newest
        guard Self.plausibleBlobs(blobs),
              let totals = Self.checkedEntries(entries, blobs: blobs, keyBytes: keyArena.count, oldest: oldest, newest: newest)
        else { return nil }
        (pinnedEntries, entryLogicalBytes, earliestExpiry) = (totals.pinnedEntries, totals.entryLogicalBytes, totals.earliestExpiry)
        (protectedOldest, protectedEntries) = (totals.protectedOldest, totals.protectedEntries)
        segmented = parts.segmented
        orderFromSegments = parts.segmented
        guard segmented || protectedEntries == 0 else { return nil }
        // One pass over the blobs: each one's reference counts checked against its entries',
        // then its lengths summed (they are plausible: checked above).
        for slot in blobs.indices {
            let blob = blobs[slot]
            guard blob.references > 0, blob.references == totals.references[slot],
                  blob.pinnedReferences == totals.pinnedReferences[slot] else { return nil }
            let info = blob.info
            logicalBytes += info.rawLength
            storedBytes += info.footprint
            // Each length is at most `BlobInfo.maxLength`, so checking after each sum keeps them far from overflow.
            guard logicalBytes <= Self.maxTotalBytes, storedBytes <= Self.maxTotalBytes else { return nil }
            if blob.pinnedReferences > 0 { pinnedStoredBytes += info.footprint }
            accountPack(info, sign: 1)
        }
        // Namespaces are not in a snapshot: counted again from the keys (two byte compares
        // for a key of no namespace).
        for slot in entries.indices where entries[slot].blob >= 0 {
            guard let prefix = withKeyBytes(at: Int32(slot), NamespaceKey.prefix(ofRaw:)) else { continue }
            let blob = blobs[Int(entries[slot].blob)]
            namespaces.add(prefix: prefix, blobSlot: entries[slot].blob, footprint: blob.info.footprint,
                           rawLength: Int(blob.rawLength))
        }
    }

    /// Gives a restored index its snapshot's key and blob tables, checked apart (each names
    /// every slot once, `SlotTable(buckets:slotCount:)`); `false` when they do not hold one
    /// slot per entry and per blob.
    mutating func adopt(keyTable: SlotTable, blobTable: SlotTable) -> Bool {
        precondition(self.keyTable.count == 0 && self.blobTable.count == 0, "only a restored index adopts tables")
        guard keyTable.count == entries.count, blobTable.count == blobs.count else { return false }
        self.keyTable = keyTable
        self.blobTable = blobTable
        return true
    }

    var entryCount: Int { keyTable.count }
    var blobCount: Int { blobTable.count }

    /// The storage of the entries and blobs, as far as their capacity goes (`ReplayPrefault`:
    /// a replay into an index it sized only appends to them, within that capacity).
    var growthRegions: (entries: ReplayPrefault.Region, blobs: ReplayPrefault.Region) {
        (entries.reservedRegion, blobs.reservedRegion)
    }

    /// The bytes of the entries and blobs in use.
    var filledBytes: (entries: Int, blobs: Int) {
        (entries.count * MemoryLayout<Entry>.stride, blobs.count * MemoryLayout<Blob>.stride)
    }

    /// Makes room for about `count` entries and blobs, and `keyBytes` bytes of keys, so replay
    /// does not rehash or copy as it grows. (Room, not memory: pages never written stay unmapped.)
    mutating func reserveCapacity(_ count: Int, keyBytes: Int = 0) {
        keyArena.reserveCapacity(min(keyBytes, Int(UInt32.max)))
        guard count > entries.count else { return }
        entries.reserveCapacity(count)
        blobs.reserveCapacity(count)
        if keyTable.count == 0 { keyTable = SlotTable(capacity: count) }
        if blobTable.count == 0 { blobTable = SlotTable(capacity: count) }
    }

    /// Makes room for `count` more entries and blobs than the index has slots for now, and
    /// `keyBytes` more bytes of keys (a replay onto a restored snapshot: its storage is
    /// copied once instead of as it grows), and moves its tables out of the snapshot's mapping
    /// (`FlatArray.moveToOwnMemory`; they grow as they must: `count` counts every record, and
    /// a tail of reads would oversize them). Returns whether the entries and blobs are now in
    /// memory of their own, with that room (what `ReplayPrefault` needs).
    mutating func reserveCapacity(adding count: Int, keyBytes: Int) -> Bool {
        keyArena.reserveCapacity(min(keyArena.count + keyBytes, Int(UInt32.max)))
        entries.reserveCapacity(entries.count + count)
        blobs.reserveCapacity(blobs.count + count)
        keyTable.moveToOwnMemory()
        blobTable.moveToOwnMemory()
        return count > 0 && !entries.isMapped && !blobs.isMapped
    }

    // MARK: Changes

    /// The slots of the live entries whose expiry is at or before `time`, in slot order; no
    /// scan while no entry can have expired (`earliestExpiry`), and afterwards that bound is
    /// the earliest expiry of the others.
    mutating func expiredSlots(at time: Int64) -> [Int32] {
        guard earliestExpiry <= time else { return [] }
        var expired: [Int32] = [], earliest = Int64.max
        for (slot, entry) in entries.enumerated() where entry.blob >= 0 {
            if entry.expiry <= time { expired.append(Int32(slot)) } else { earliest = min(earliest, entry.expiry) }
        }
        earliestExpiry = earliest
        return expired
    }

    /// Makes or replaces the entry for `record.key`, as most recently used.
    /// Returns the blob released by the replaced value, if its last reference went.
    @discardableResult
    mutating func upsert(_ record: EntryRecord, orderJournaled: Bool) -> BlobInfo? {
        record.withView { upsert($0, hashes: hashes(of: .set($0)), orderJournaled: orderJournaled) }
    }

    /// `upsert(_:orderJournaled:)` for an entry whose key is a view of UTF-8 bytes, with the
    /// `hashes(of:)` of its record.
    @discardableResult
    mutating func upsert(_ record: EntryView, hashes: RecordHashes, orderJournaled: Bool) -> BlobInfo? {
        // Retain first: when the key already holds this blob, releasing the old entry first
        // would drop the blob's last reference and delete it.
        let blob = retain(record.blob, pinned: record.pinned, hash: hashes.blob)
        earliestExpiry = min(earliestExpiry, record.expiry)
        let replaced = slot(ofKeyBytes: record.key, hash: hashes.key)
        let hash = UInt32(truncatingIfNeeded: hashes.key)
        let slot = newEntrySlot(Entry(
            created: record.created, expiry: record.expiry, access: record.access,
            journaledAccess: record.access, keyOffset: 0, keyLength: 0, keyHash: hash, blob: blob,
            pinned: record.pinned, orderJournaled: orderJournaled))
        if let replaced {
            // The new entry takes over the old one's key bytes and bucket.
            entries[Int(slot)].keyOffset = entries[Int(replaced)].keyOffset
            entries[Int(slot)].keyLength = entries[Int(replaced)].keyLength
            keyTable.replace(replaced, with: slot, hash: UInt64(hash))
        } else {
            entries[Int(slot)].keyOffset = appendKey(record.key)
            entries[Int(slot)].keyLength = UInt32(record.key.count)
            keyTable.insert(slot, hash: UInt64(hash))
        }
        // The blob's own length, which `detach` subtracts (a record naming a known blob
        // with another length must not make the total drift).
        entryLogicalBytes += Int(blobs[Int(blob)].rawLength)
        if let prefix = NamespaceKey.prefix(ofRaw: record.key) {
            namespaces.add(prefix: prefix, blobSlot: blob, footprint: blobs[Int(blob)].info.footprint,
                           rawLength: Int(blobs[Int(blob)].rawLength))
        }
        if record.pinned {
            pinnedEntries += 1
        } else {
            linkStored(slot, used: record.isProtected || replaced.map { !entries[Int($0)].pinned } ?? false)
        }
        return replaced.flatMap { detach(slot: $0, keepingKey: true) }
    }

    /// Drops the entry in `slot`; returns its blob if that was the last reference.
    @discardableResult
    mutating func remove(slot: Int32) -> BlobInfo? {
        keyTable.remove(slot, hash: UInt64(entries[Int(slot)].keyHash))
        return detach(slot: slot, keepingKey: false)
    }

    /// Frees a slot the key table no longer points at: LRU link, counts, key bytes, blob reference.
    private mutating func detach(slot: Int32, keepingKey: Bool) -> BlobInfo? {
        let entry = entries[Int(slot)]
        if let prefix = withKeyBytes(at: slot, NamespaceKey.prefix(ofRaw:)) {
            namespaces.remove(prefix: prefix, blobSlot: entry.blob, footprint: blobs[Int(entry.blob)].info.footprint,
                              rawLength: Int(blobs[Int(entry.blob)].rawLength))
        }
        if entry.pinned { pinnedEntries -= 1 } else { unlink(slot) }
        entryLogicalBytes -= Int(blobs[Int(entry.blob)].rawLength)
        entries[Int(slot)].blob = -1
        freeEntries.append(slot)
        if !keepingKey { releaseKey(length: Int(entry.keyLength)) }
        return release(blobSlot: entry.blob, pinned: entry.pinned)
    }

    /// Records that a blob was rewritten (moved, or re-encoded): new place, codec and size.
    mutating func relocate(_ info: BlobInfo) {
        guard let slot = blobSlot(of: info.id) else { return }
        let before = blobs[Int(slot)].info.footprint
        account(blobs[Int(slot)], sign: -1)
        blobs[Int(slot)].move(to: info)
        account(blobs[Int(slot)], sign: 1)
        namespaces.blobResized(slot: slot, by: blobs[Int(slot)].info.footprint - before)
    }

    /// Drops every entry (or only unpinned ones); returns the blobs whose last reference went.
    mutating func removeAll(includingPinned: Bool) -> [BlobInfo] {
        var released: [BlobInfo] = []
        for slot in liveSlots where includingPinned || !entries[Int(slot)].pinned {
            if let blob = remove(slot: slot) { released.append(blob) }
        }
        return released
    }

    // MARK: Private

    private mutating func newEntrySlot(_ entry: Entry) -> Int32 {
        if let free = freeEntries.popLast() {
            entries[Int(free)] = entry
            return free
        }
        entries.append(entry)
        return Int32(entries.count - 1)
    }

    /// Counts one more reference to `info`'s blob, adding it when new; returns its slot.
    private mutating func retain(_ info: BlobInfo, pinned: Bool, hash: UInt64) -> Int32 {
        let slot: Int32
        if let existing = blobSlot(of: info.id, hash: hash) {
            slot = existing
        } else {
            let blob = Blob(info)
            if let free = freeBlobs.popLast() {
                slot = free
                blobs[Int(slot)] = blob
            } else {
                slot = Int32(blobs.count)
                blobs.append(blob)
            }
            blobTable.insert(slot, hash: hash)
            logicalBytes += info.rawLength
            storedBytes += info.footprint
            accountPack(info, sign: 1)
        }
        blobs[Int(slot)].references += 1
        if pinned {
            blobs[Int(slot)].pinnedReferences += 1
            if blobs[Int(slot)].pinnedReferences == 1 { pinnedStoredBytes += blobs[Int(slot)].info.footprint }
        }
        return slot
    }

    private mutating func release(blobSlot slot: Int32, pinned: Bool) -> BlobInfo? {
        let footprint = blobs[Int(slot)].info.footprint
        blobs[Int(slot)].references -= 1
        if pinned {
            blobs[Int(slot)].pinnedReferences -= 1
            if blobs[Int(slot)].pinnedReferences == 0 { pinnedStoredBytes -= footprint }
        }
        guard blobs[Int(slot)].references == 0 else { return nil }
        let info = blobs[Int(slot)].info
        blobTable.remove(slot, hash: KeyHash.hash(info.id, seed: seed))
        freeBlobs.append(slot)
        logicalBytes -= info.rawLength
        storedBytes -= footprint
        accountPack(info, sign: -1)
        return info
    }

    private mutating func account(_ blob: Blob, sign: Int) {
        let info = blob.info
        storedBytes += sign * info.footprint
        if blob.pinnedReferences > 0 { pinnedStoredBytes += sign * info.footprint }
        accountPack(info, sign: sign)
    }
}

