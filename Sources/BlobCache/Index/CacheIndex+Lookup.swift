import CZlib
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Reads: an entry by key, a blob by id, and the live entries and blobs walked in slot order.
// Nothing here changes the index.
extension CacheIndex {
    func slot(of key: String) -> Int32? {
        var key = key
        return key.withUTF8 { slot(ofKeyBytes: UnsafeRawBufferPointer($0)) }
    }

    /// The slot of the entry whose key is `key`. `prefetchingBlob` is for a read, which looks
    /// at the entry's blob next: in a large index both that blob and the key's bytes miss the
    /// caches, so the blob is asked for before the key compares and the two loads overlap.
    /// (Replay leaves it off: most of its lookups never look at the blob.)
    func slot(ofKeyBytes key: UnsafeRawBufferPointer, prefetchingBlob: Bool = false) -> Int32? {
        slot(ofKeyBytes: key, hash: KeyHash.hash(key, seed: seed), prefetchingBlob: prefetchingBlob)
    }

    /// `slot(ofKeyBytes:)` for a key whose `KeyHash` is already known.
    func slot(ofKeyBytes key: UnsafeRawBufferPointer, hash: UInt64, prefetchingBlob: Bool = false) -> Int32? {
        // Every array is taken as a pointer out here: touching one inside the probe's closure
        // would retain it on every lookup.
        entries.withUnsafeBufferPointer { entries in
            blobs.withUnsafeBufferPointer { blobs in
                keyArena.withUnsafeBytes { arena in
                    keyTable.find(hash: hash) { slot in
                        let entry = entries[Int(slot)]
                        guard Int(entry.keyLength) == key.count else { return false }
                        if prefetchingBlob, entry.blob >= 0, Int(entry.blob) < blobs.count, let base = blobs.baseAddress {
                            blobcache_prefetch_read(base + Int(entry.blob))
                        }
                        return key.count == 0 || memcmp(arena.baseAddress! + Int(entry.keyOffset), key.baseAddress!, key.count) == 0
                    }
                }
            }
        }
    }

    func entry(at slot: Int32) -> Entry { entries[Int(slot)] }

    func blob(_ id: BlobID) -> Blob? { blobSlot(of: id).map { blobs[Int($0)] } }
    func blob(at slot: Int32) -> Blob { blobs[Int(slot)] }
    /// The blob entry `slot` refers to.
    func blob(ofEntry slot: Int32) -> Blob { blobs[Int(entries[Int(slot)].blob)] }

    func record(at slot: Int32) -> EntryRecord {
        let entry = entries[Int(slot)]
        return EntryRecord(key: key(at: slot), blob: blobs[Int(entry.blob)].info, pinned: entry.pinned,
                           created: entry.created, expiry: entry.expiry, access: entry.access,
                           isProtected: entry.isProtected)
    }

    /// Every live entry's slot, in slot order.
    var liveSlots: [Int32] { slots { _ in true } }

    /// The slots of the live entries that `include` accepts, in slot order.
    func slots(where include: (Entry) -> Bool) -> [Int32] {
        var slots: [Int32] = []
        for (slot, entry) in entries.enumerated() where entry.blob >= 0 && include(entry) { slots.append(Int32(slot)) }
        return slots
    }

    /// Every live entry's key and slot (a copy: callers may change the index while walking it).
    var keyedSlots: [(key: String, slot: Int32)] { liveSlots.map { (key(at: $0), $0) } }

    /// Every stored blob with its id (a copy: callers may change the index while walking it).
    var storedBlobs: [(id: BlobID, blob: Blob)] {
        blobs.compactMap { $0.references > 0 ? ($0.id, $0) : nil }
    }

    /// Calls `body` with every stored blob.
    func forEachBlob(_ body: (Blob) throws -> Void) rethrows {
        for blob in blobs where blob.references > 0 { try body(blob) }
    }

    /// Starts loading the buckets where `record`'s lookups start (`SlotTable.prefetch(hash:)`).
    func prefetchBuckets(of record: JournalRecordView, hashes: RecordHashes) {
        if record.key != nil { keyTable.prefetch(hash: hashes.key) }
        if record.blob != nil { blobTable.prefetch(hash: hashes.blob) }
    }

    func blobSlot(of id: BlobID) -> Int32? { blobSlot(of: id, hash: KeyHash.hash(id, seed: seed)) }

    func blobSlot(of id: BlobID, hash: UInt64) -> Int32? {
        blobs.withUnsafeBufferPointer { blobs in
            blobTable.find(hash: hash) { blobs[Int($0)].id == id }
        }
    }
}

extension CacheIndex {
    /// The first way this index differs from `other` in what the cache serves (keys, their
    /// blobs, pinning, times, LRU order, blob places), described; `nil` when they agree.
    /// `order`: compare the eviction order and which entries are protected too (a journal
    /// replays a segmented LRU's order only approximately).
    func firstDifference(from other: CacheIndex, order: Bool = true) -> String? {
        guard entryCount == other.entryCount else { return "\(entryCount) entries, not \(other.entryCount)" }
        guard blobCount == other.blobCount else { return "\(blobCount) blobs, not \(other.blobCount)" }
        for slot in other.liveSlots {
            let key = other.key(at: slot)
            guard let mine = self.slot(of: key) else { return "key \(BlobCache.escapedKey(key)) is missing" }
            let (a, b) = (entry(at: mine), other.entry(at: slot))
            guard blob(ofEntry: mine).info == other.blob(ofEntry: slot).info, a.pinned == b.pinned,
                  a.created == b.created, a.expiry == b.expiry, a.access == b.access, !order || a.isProtected == b.isProtected else {
                return "key \(BlobCache.escapedKey(key)) differs"
            }
        }
        guard !order || lruOrder().map(key(at:)) == other.lruOrder().map(other.key(at:)) else { return "LRU order differs" }
        return nil
    }
}
