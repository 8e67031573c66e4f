import SystemPackage

/// The cache's mutable state and every operation on it that must be atomic: index, journal,
/// pack appends, publishing and deleting blobs. Lives inside the `BlobCache` mutex; never
/// hashes or compresses (callers do that first, outside the lock).
/// `@unchecked Sendable`: it is only ever touched inside the owning `BlobCache`'s mutex.
final class CacheEngine: @unchecked Sendable {
    let directory: FilePath
    var index = CacheIndex()
    let store: BlobStore
    var journal: JournalFile
    var limits: BlobCache.Limits
    let clock: any CacheClock
    let accessInterval: Int64
    /// This session's counts; `lifetimeCounters` adds those saved by earlier sessions.
    var counters = BlobCache.Counters()
    var savedCounters = BlobCache.Counters()
    /// Journal bytes the snapshot file on disk reflects; `nil` when there is none that matches.
    var snapshotCoverage: Int64?
    var snapshotThreshold: Int64 = 64 * 1024
    var lifetimeCounters: BlobCache.Counters { savedCounters + counters }

    init(directory: FilePath, store: BlobStore, journal: JournalFile, limits: BlobCache.Limits,
         clock: any CacheClock, accessInterval: Int64) {
        self.directory = directory
        self.store = store
        self.journal = journal
        self.limits = limits
        self.clock = clock
        self.accessInterval = accessInterval
    }

    func now() -> Int64 { Nanoseconds.from(clock.now()) }

    // MARK: Set

    /// Points `key` at a blob the index already holds; `false` when it does not hold it.
    func setExisting(key: String, id: BlobID, expiryRule: Expiry, pinned: Bool) throws -> Bool {
        guard let blob = index.blob(id) else { return false }
        try checkRoom(for: blob.info, key: key)
        try link(key: key, blob: blob.info, expiryRule: expiryRule, pinned: pinned)
        counters.deduplicatedSets += 1
        return true
    }

    /// Publishes a newly prepared blob (renaming its staged file, or appending its pack record)
    /// and points `key` at it. When another set stored the same blob meanwhile, the staged file
    /// is discarded and that blob is shared.
    func setNew(key: String, blob prepared: PreparedBlob, staged: StagedLooseBlob?, expiryRule: Expiry, pinned: Bool) throws {
        if try setExisting(key: key, id: prepared.id, expiryRule: expiryRule, pinned: pinned) {
            if let staged { _ = try? FileIO.remove(staged.temporary) }
            return
        }
        var info = BlobInfo(id: prepared.id, codec: prepared.codec, rawLength: prepared.rawLength,
                            payloadLength: prepared.payloadLength, place: prepared.packed ? .packed(segment: 0, offset: 0) : .loose)
        do {
            try checkRoom(for: info, key: key)
        } catch {
            if let staged { _ = try? FileIO.remove(staged.temporary) }
            throw error
        }
        if let staged {
            try store.publish(staged)
        } else {
            info.place = try store.append(prepared)
        }
        try link(key: key, blob: info, expiryRule: expiryRule, pinned: pinned)
        try collectPackGarbageIfWorthIt()
    }

    /// The entry update shared by both kinds of set: index, journal, eviction, one flush.
    private func link(key: String, blob: BlobInfo, expiryRule: Expiry, pinned: Bool) throws {
        let time = now()
        let record = EntryRecord(key: key, blob: blob, pinned: pinned, created: time,
                                 expiry: expiryRule.deadline(from: time), access: time)
        if let released = index.upsert(record, orderJournaled: true) { dispose(released) }
        journal.append(.set(record))
        counters.sets += 1
        try evictToLimits()
        try journal.flush()
        try compactJournalIfRedundant()
    }

    /// Refuses a set that could never fit: a value over the byte cap, or pinned entries (which
    /// eviction cannot touch) that would exceed a cap together with this one.
    private func checkRoom(for blob: BlobInfo, key: String) throws {
        let replacedSlot = index.slot(of: key)
        let replaced = replacedSlot.map { index.entry(at: $0) }
        if replacedSlot == nil, !index.hasRoom(forKeyOf: key.utf8.count) {
            throw BlobCacheError.invalidKey(reason: "the cache's keys would take more than 4 GiB in all")
        }
        if let max = limits.maxStoredBytes {
            if blob.footprint > max { throw BlobCacheError.valueTooLarge(storedBytes: blob.footprint, limit: max) }
            var floor = index.pinnedStoredBytes
            if (index.blob(blob.id)?.pinnedReferences ?? 0) == 0 { floor += blob.footprint }
            if let replacedSlot, let replaced, replaced.pinned, case let old = index.blob(ofEntry: replacedSlot), old.id != blob.id,
               old.pinnedReferences == 1 {
                floor -= old.info.footprint
            }
            if floor > max {
                throw BlobCacheError.pinnedEntriesExceedLimit(
                    detail: "pinned entries hold \(index.pinnedStoredBytes) bytes; with this value \(floor) > \(max)")
            }
        }
        if let max = limits.maxEntries {
            let floor = index.pinnedEntries + 1 - ((replaced?.pinned ?? false) ? 1 : 0)
            if floor > max {
                throw BlobCacheError.pinnedEntriesExceedLimit(detail: "\(index.pinnedEntries) pinned entries; the limit is \(max) entries")
            }
        }
    }

    // MARK: Get

    /// What a reader needs to fetch a value outside the lock.
    struct ReadTicket: Sendable {
        let info: BlobInfo
        let location: BlobStore.Location?
    }

    /// Looks a key up for reading: a miss for absent or expired keys (expired ones are removed
    /// now), else marks the access and returns where the bytes are.
    func beginRead(key: String) throws -> ReadTicket? {
        guard let slot = index.slot(of: key) else {
            counters.misses += 1
            return nil
        }
        let entry = index.entry(at: slot)
        let time = now()
        if entry.expiry <= time {
            try remove(slot: slot, reason: .expired)
            try journal.flush()
            counters.misses += 1
            return nil
        }
        let journaled = time - entry.journaledAccess >= accessInterval
        index.touch(slot: slot, at: time, journaled: journaled)
        if journaled {
            journal.append(.access(key: key, time: time))
            try journal.flush()
        }
        counters.hits += 1
        let info = index.blob(at: entry.blob).info
        return ReadTicket(info: info, location: store.location(of: info))
    }

    /// Looks a blob up by id for reading.
    func beginRead(id: BlobID) -> ReadTicket? {
        guard let blob = index.blob(id) else { return nil }
        return ReadTicket(info: blob.info, location: store.location(of: blob.info))
    }

    /// Handles a blob that failed its checks on read. If it is still the indexed blob, every
    /// entry using it is dropped (reason repair) and the error is returned for the caller to
    /// throw; if it went away meanwhile (evicted, removed), the read is simply a miss (`nil`).
    func blobFailed(_ info: BlobInfo, damage: BlobDamage) throws -> BlobCacheError? {
        guard let current = index.blob(info.id), current.info.place == info.place else { return nil }
        var keys: [String] = []
        for (key, slot) in index.keyedSlots where index.blob(ofEntry: slot).id == info.id { keys.append(key) }
        for key in keys { try remove(slot: index.slot(of: key)!, reason: .repair) }
        try journal.flush()
        counters.corruptReads += 1
        counters.hits -= 1
        counters.misses += 1
        return .corruptBlob(id: info.id, path: store.describe(info), reason: damage.detail)
    }

    // MARK: Remove

    /// Drops one entry, journaling why, and deletes its blob if that was its last reference.
    func remove(slot: Int32, reason: RemovalReason) throws {
        index.withKeyBytes(at: slot) { journal.appendRemove(keyBytes: $0, reason: reason) }
        if let released = index.remove(slot: slot) { dispose(released) }
        switch reason {
        case .evicted: counters.evictions += 1
        case .expired: counters.expirations += 1
        case .explicit, .repair: break
        }
    }

    /// Deletes a blob no entry refers to any more. A packed blob's record just becomes dead
    /// space until pack garbage collection.
    func dispose(_ blob: BlobInfo) {
        if case .loose = blob.place { try? store.deleteLoose(blob.id) }
    }

    /// Evicts least recently used unpinned entries until the totals are within the limits.
    func evictToLimits() throws {
        while isOverLimits, index.oldest >= 0 {
            try remove(slot: index.oldest, reason: .evicted)
        }
    }

    var isOverLimits: Bool {
        if let max = limits.maxStoredBytes, index.storedBytes > max { return true }
        if let max = limits.maxEntries, index.entryCount > max { return true }
        return false
    }
}
