import SystemPackage

/// The cache's mutable state and every operation on it that must be atomic: index, journal,
/// pack appends, publishing and deleting blobs. Lives inside the `BlobCache` lock; never
/// hashes or compresses (callers do that first, outside the lock, with `pipeline`).
///
/// Every operation runs through `perform`, which ends it one way (docs/RELIABILITY.md):
/// evict to the limits, write the journal records (fsynced as the durability mode promises),
/// only then delete what the records made unneeded, then collect pack garbage and compact
/// the journal when due. Nothing is destroyed before the records that make it safe are down.
/// `@unchecked Sendable`: it is only ever touched inside the owning `BlobCache`'s lock.
final class CacheEngine: @unchecked Sendable {
    let files: CacheFiles
    let io: FileIO
    let pipeline: BlobPipeline
    /// The index; while an open's restore is deferred (`pendingRestore`), the first use
    /// restores it (an operation that can report a failure calls `finishRestoring()` first).
    var index: CacheIndex {
        _read {
            if pendingRestore != nil { restoreNow() }
            yield restoredIndex
        }
        _modify {
            if pendingRestore != nil { restoreNow() }
            yield &restoredIndex
        }
    }
    /// The index itself: only `index` and `CacheEngine+DeferredRestore` use it.
    var restoredIndex = CacheIndex()
    /// The snapshot an open mapped but has not restored yet (`CacheEngine+DeferredRestore`).
    var pendingRestore: PendingRestore?
    /// A deferred restore fell back to replaying the journal: the open's checks (entries past
    /// the newest segment's end, expired entries) run at the next operation under the flock.
    var pendingOpenChecks = false
    let store: BlobStore
    var journal: JournalFile
    var limits: BlobCache.Limits
    let clock: any CacheClock
    let accessInterval: Int64
    /// This open's counts; `lifetimeCounters` adds those saved by earlier opens.
    var counters = BlobCache.Counters()
    /// The counts earlier opens saved in `DIR/stats`, read when first asked for (by
    /// `statistics()`, `totals()` or the final figures a clean close keeps), not by the open:
    /// in a fresh process, that first JSON decoding took 8% of the samples of opening a cache
    /// of 100,000 entries. The open returns sooner; a clean close still pays it.
    lazy var savedCounters = BlobCache.Counters.saved(in: files, io: io)
    /// Journal bytes the snapshot file on disk reflects; `nil` when there is none that matches.
    var snapshotCoverage: Int64?
    var snapshotThreshold: Int64 = 64 * 1024
    /// The least journal growth past the snapshot that makes a checkpoint due (`checkpointThreshold`).
    var checkpointMinimum: Int64 = 16 << 20
    /// After a failed checkpoint: the journal (its salt) and size below which none is tried again.
    var checkpointBackoff: (salt: UInt64, size: Int64)?
    var lifetimeCounters: BlobCache.Counters { savedCounters + counters }

    /// `DIR/lock`, whose flock every operation that writes holds (`exclusively`).
    let lock: DirectoryLock
    /// `DIR/sequence` (every open maps it: `open` refuses a directory where it cannot).
    var sequence: ChangeSequence?
    /// The sequence at which the index was last brought up to date (even).
    var appliedSequence: UInt64 = 0
    /// The sequence this open left at the end of its last operation under the flock, whose
    /// catch-up checked the journal's and the active segment's files: while the sequence still
    /// holds it no other open changed anything (every writer moves it), so the next operation
    /// under the flock needs no `fstat` at all (how a process alone keeps its speed).
    var checkedSequence: UInt64?
    /// Whether the catch-up running now cut the journal (`catchUp` reports it).
    var journalCut = false
    /// Accesses that reads without the flock made due for the journal, by key: written by the
    /// next operation that holds it (`writePendingAccesses`).
    var pendingAccesses = [ExactKey: Int64]()   // not `[:]`, whose initializer instantiates the storage type
    /// When the oldest pending access was made.
    var pendingSince: Int64 = 0
    /// Whether the running operation holds the flock (a read on a current index does not).
    var holdsLock = false

    /// Decoded values kept in memory, by blob id (`Configuration.memoryLimit`).
    var memory = MemoryTier(limit: 0)
    /// Bumped whenever a blob may stop being stored (its last entry went, here or in another
    /// open). An id names a value only while its blob is stored: once it is gone, another value
    /// with the same MD5 may be stored under it. A value read outside the lock is offered to
    /// the memory tier only if this did not move since its ticket (`ReadTicket.releases`).
    var releases: UInt64 = 0
    /// Where changes go (`BlobCache.changes(forKeysWithPrefix:)`); they are recorded only
    /// while somebody listens.
    var changeHub: ChangeHub?
    /// Changes made by the running operation (and by others' records it replayed), published
    /// by the facade before it lets go of the lock.
    var madeChanges: [BlobCache.Change] = []
    /// Byte caps of namespaces set in this open, by key prefix (`NamespaceKey`).
    var namespaceLimits: [[UInt8]: Int] = [:]
    /// Namespaces an eviction pass could not bring under their caps (pinned entries), with
    /// the bytes they held then: not over again until those change, so that they do not send
    /// every operation to the flock and a walk of the LRU list.
    var namespacesOverPinned: [[UInt8]: Int] = [:]
    /// Logs recovery and maintenance events; metrics of hits, misses, bytes and latency.
    var telemetry = Telemetry.disabled

    /// Whether changes are being recorded now.
    var recordsChanges: Bool { changeHub?.isObserved ?? false }

    /// Maintenance runs that failed after their operation had committed (kept for tests; the
    /// operation itself succeeded).
    var maintenanceFailures = 0
    /// Journal size below which a compaction that failed is not tried again.
    var journalCompactionBackoff: Int64 = 0
    /// Dead pack bytes below which a collection that failed is not tried again.
    var packCollectionBackoff = 0

    /// What the running operation deletes once its journal records are down.
    private var disposals: [Disposal] = []
    /// Whether those deletions destroy data that was durable (a moved record's old copy), so
    /// that the new copies and the journal must be fsynced first whatever the durability mode.
    private var disposalsDestroyDurableData = false

    /// Something an operation deletes at its end.
    enum Disposal: Equatable {
        /// A loose blob file no entry uses.
        case looseBlob(BlobID)
        /// A pack segment none of whose records is live.
        case segment(UInt32)
    }

    init(files: CacheFiles, io: FileIO, pipeline: BlobPipeline, store: BlobStore, journal: JournalFile,
         limits: BlobCache.Limits, clock: any CacheClock, accessInterval: Int64, lock: DirectoryLock) {
        self.lock = lock
        self.files = files
        self.io = io
        self.pipeline = pipeline
        self.store = store
        self.journal = journal
        self.limits = limits
        self.clock = clock
        self.accessInterval = accessInterval
    }

    func now() -> Int64 { Nanoseconds.from(clock.now()) }

    // MARK: The commit path

    /// Runs one operation and ends it: eviction, the journal write (and fsync per the
    /// durability mode), then the deletions the operation queued. A failure in the body still
    /// commits what the body already changed. Pack GC and journal compaction are not part of
    /// it: the facade runs them after the operation, mostly outside the lock (`maintenanceDue`).
    func perform<T>(_ body: () throws -> T) throws -> T {
        // Without the flock nothing may be written: a cap lowered by another open's limits
        // would evict, so such an operation runs again holding it.
        if !holdsLock && (isOverLimits || isOverNamespaceLimits) { throw NeedsLock() }
        let outcome = Result { try body() }
        evictToLimits()
        // Nothing written, nothing to delete (most reads): nothing to commit.
        if journal.hasPending || !disposals.isEmpty { try commitRecords() }
        return try outcome.get()
    }

    /// Maintenance the cache needs after an operation.
    enum Maintenance: Equatable {
        /// Dead pack bytes passed their allowance.
        case packCollection
        /// The journal passed twice its compacted size plus the slack.
        case journalRewrite
        /// The journal grew past the snapshot by `checkpointThreshold`.
        case checkpoint
    }

    /// What maintenance is due, if any: pack collection first, then journal compaction, then
    /// a checkpoint (after a rewrite, which deletes the snapshot, one is due at once). A
    /// reader (`get`) is given a journal rewrite only past twice the writers' threshold (see
    /// `journalIsRedundant`) and never a pack collection or a checkpoint (reads make no dead
    /// bytes but for expired entries, and few records; the next write does those).
    func maintenanceDue(reader: Bool) -> Maintenance? {
        guard journal.failure == nil else { return nil }
        if !reader, deadPackBytes > max(packGarbageAllowance, packCollectionBackoff) { return .packCollection }
        if journalIsRedundant(reader: reader) { return .journalRewrite }
        return !reader && checkpointIsDue ? .checkpoint : nil
    }

    /// Writes the pending records and then performs the queued deletions. When a deletion
    /// destroys a durable copy, every appended record and the journal are fsynced first; a
    /// failure anywhere before drops the deletions (their files stay, harmless: compact and
    /// fsck --repair sweep them).
    func commitRecords() throws {
        let due = disposals, durable = disposalsDestroyDurableData
        disposals.removeAll()
        disposalsDestroyDurableData = false
        if durable {
            // A failed fsync may have dropped the pages it could not write and marked them
            // clean, so a later fsync would report success for copies that never reached the
            // disk: the records naming those copies must never be written. Stop until reopen.
            do { try store.syncAll() } catch {
                journal.abandon(because: error)
                throw error
            }
        }
        try journal.flush()
        if durable { try journal.sync() }
        for disposal in due {
            switch disposal {
            case .looseBlob(let id):
                // Stored again by this very operation (a re-set of the same bytes): keep it.
                if let blob = index.blob(id), case .loose = blob.info.place { continue }
                try? store.deleteLoose(id)
            case .segment(let number):
                try? store.deleteSegment(number)
            }
        }
    }

    /// Queues a deletion for the end of the operation.
    func dispose(_ disposal: Disposal, destroysDurableData: Bool = false) {
        disposals.append(disposal)
        if destroysDurableData { disposalsDestroyDurableData = true }
    }

    /// Queues the deletion of a blob no entry refers to any more. A packed blob's record just
    /// becomes dead space until pack garbage collection.
    func release(_ blob: BlobInfo?) {
        guard let blob else { return }
        releases &+= 1
        memory.remove(blob.id)
        if case .loose = blob.place { dispose(.looseBlob(blob.id)) }
    }

    // MARK: Set

    /// Whether `key` holds an unexpired entry.
    func holds(_ key: String) -> Bool {
        guard let slot = index.slot(of: key) else { return false }
        return index.entry(at: slot).expiry > now()
    }

    /// Points `key` at a blob the index already holds, once its bytes are confirmed to be
    /// `value`'s (`confirmStoredCopy`: a different value with the same MD5 throws
    /// `contentCollision`); `false` when the index does not hold it, or held it damaged (its
    /// entries are dropped, so the caller stores `value` as a new blob).
    /// `remembering`: the value goes into the memory tier too, under this lock (where its id
    /// surely names it).
    func setExisting(key: String, id: BlobID, value: UnsafeRawBufferPointer, expiryRule: Expiry, pinned: Bool,
                     remembering: Bool = false) throws -> Bool {
        guard let blob = index.blob(id) else { return false }
        try checkRoom(for: blob.info, key: key)
        guard try confirmStoredCopy(of: blob.info, equals: value, key: key) == .same else { return false }
        link(key: key, blob: blob.info, expiryRule: expiryRule, pinned: pinned)
        if remembering { memory.insert(Array(value), for: id) }
        counters.deduplicatedSets += 1
        telemetry.dedupedSet(key: key)
        return true
    }

    /// Publishes a newly prepared blob (renaming its staged file, or appending its pack record)
    /// and points `key` at it; returns whether it was published. When another set stored the
    /// same blob meanwhile, that blob is shared (and the caller discards its staged file).
    @discardableResult
    func setNew(key: String, blob prepared: PreparedBlob, value: UnsafeRawBufferPointer, staged: StagedLooseBlob?,
                expiryRule: Expiry, pinned: Bool, remembering: Bool = false) throws -> Bool {
        if try setExisting(key: key, id: prepared.id, value: value, expiryRule: expiryRule, pinned: pinned,
                           remembering: remembering) { return false }
        var info = prepared.info
        try checkRoom(for: info, key: key)
        if let staged {
            try store.publish(staged)
        } else {
            info.place = try store.append(prepared)
        }
        link(key: key, blob: info, expiryRule: expiryRule, pinned: pinned)
        if remembering { memory.insert(Array(value), for: info.id) }
        counters.bytesWritten += info.footprint
        telemetry.wroteBlob(key: key, bytes: info.footprint)
        return true
    }

    /// The entry update shared by both kinds of set: index and journal record.
    func link(key: String, blob: BlobInfo, expiryRule: Expiry, pinned: Bool) {
        let time = now()
        let record = EntryRecord(key: key, blob: blob, pinned: pinned, created: time,
                                 expiry: expiryRule.deadline(from: time), access: time)
        release(index.upsert(record, orderJournaled: true))
        journal.append(.set(record))
        counters.sets += 1
        // Whatever was pinned over a namespace's cap may not be now: let eviction look again.
        if !namespacesOverPinned.isEmpty { namespacesOverPinned.removeAll() }
        if recordsChanges { madeChanges.append(.set(key: key, id: blob.id)) }
    }

    /// Refuses a set that could never fit: a value over the byte cap, or pinned entries (which
    /// eviction cannot touch) that would exceed a cap together with this one.
    func checkRoom(for blob: BlobInfo, key: String) throws {
        let replacedSlot = index.slot(of: key)
        let replaced = replacedSlot.map { index.entry(at: $0) }
        if replacedSlot == nil, !index.hasRoom(forKeyOf: key.utf8.count) {
            throw BlobCacheError.invalidKey(reason: "the cache's keys would take more than 4 GiB in all")
        }
        if let prefix = NamespaceKey.prefix(ofRawKey: key), let max = namespaceLimits[prefix], blob.footprint > max {
            throw BlobCacheError.valueTooLarge(storedBytes: blob.footprint, limit: max)
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
        /// The value itself when the memory tier held it (no disk read needed).
        var value: [UInt8]? = nil
        /// Whether the value read from disk goes into the memory tier (`MemoryTier.admit`).
        var remember = false
        /// `CacheEngine.releases` when the ticket was made.
        var releases: UInt64 = 0
    }

    /// Looks a key up for reading: a miss for absent or expired keys (expired ones are removed
    /// now), else marks the access and returns where the bytes are.
    func beginRead(key: String) throws -> ReadTicket? {
        guard let slot = slot(of: key) else {
            counters.misses += 1
            telemetry.missed(key: key)
            return nil
        }
        return try beginRead(key: key, at: slot, time: now())
    }

    /// `beginRead(key:)` for the key's entry in `slot`, found already, at `time`.
    @inline(__always)
    func beginRead(key: String, at slot: Int32, time: Int64) throws -> ReadTicket? {
        let entry = index.entry(at: slot)
        if entry.expiry <= time {
            guard holdsLock else { throw NeedsLock() }
            remove(slot: slot, reason: .expired)
            counters.misses += 1
            telemetry.missed(key: key)
            return nil
        }
        let info = index.blob(at: entry.blob).info
        let remembered = memory.value(for: info.id)
        // First: a segment that cannot be opened counts no hit.
        let location = remembered == nil ? try store.location(of: info) : nil
        // Overflow-safe: a damaged record can hold any access time.
        let (elapsed, overflow) = time.subtractingReportingOverflow(entry.journaledAccess)
        let journaled = overflow || elapsed >= accessInterval
        if journaled && !holdsLock {
            // Without the flock the record waits for the next operation that holds it; until
            // then the order is this open's alone (a clean close journals it).
            index.touch(slot: slot, at: time, journaled: false)
            if pendingAccesses.isEmpty { pendingSince = time }
            pendingAccesses[ExactKey(key)] = time
        } else {
            index.touch(slot: slot, at: time, journaled: journaled)
            if journaled { journal.append(.access(key: key, time: time)) }
        }
        counters.countHit(bytes: info.rawLength, fromMemory: remembered != nil)   // one access, not three
        if telemetry.metrics != nil { telemetry.hit(key: key, bytes: info.rawLength, fromMemory: remembered != nil) }
        return ReadTicket(info: info, location: location, value: remembered,
                          remember: remembered == nil && memory.admit(info.id, size: info.rawLength), releases: releases)
    }

    /// Looks a blob up by id for reading.
    func beginRead(id: BlobID) throws -> ReadTicket? {
        guard let blob = index.blob(id) else { return nil }
        if let value = memory.value(for: id) { return ReadTicket(info: blob.info, location: nil, value: value) }
        return ReadTicket(info: blob.info, location: try store.location(of: blob.info),
                          remember: memory.admit(id, size: blob.info.rawLength), releases: releases)
    }

    /// What a read that failed its checks outside the lock comes to.
    enum ReadRecovery {
        /// The blob reads fine now: the failure saw it while it was being removed and stored again.
        case value([UInt8])
        /// The blob is no longer stored (removed or evicted meanwhile).
        case miss
        /// The blob is damaged: its entries were dropped (reason `damaged`).
        case damaged(BlobCacheError)
    }

    /// Reads a blob again under the lock, where nothing can remove or re-add it, after a read
    /// outside it failed its checks, or may have read another value that took the id since its
    /// ticket. A failure is trusted only if the blob still fails here: a reader whose blob was
    /// deleted and stored again between its ticket and its open must not drop the new, good copy. When the blob is gone because `key` was given another value
    /// meanwhile, that value is read (the key was never absent, so a miss would be wrong).
    func blobFailed(_ info: BlobInfo, key: String?) throws -> ReadRecovery {
        // A keyed read asks the key what it holds now (not the id: once the read's blob was
        // released, another value with the same MD5 may be stored under it); a read by id, the id.
        var blob: CacheIndex.Blob?
        if let key {
            if let slot = index.slot(of: key), index.entry(at: slot).expiry > now() { blob = index.blob(ofEntry: slot) }
        } else {
            blob = index.blob(info.id)
        }
        // Only keyed reads counted a hit, and its bytes (reads by id count nothing): turned
        // into a miss, or into the bytes read again, once the outcome is known.
        func countMiss() {
            guard key != nil else { return }
            // Never below zero: the statistics may have been reset since the hit was counted.
            counters.hits = max(0, counters.hits - 1)
            counters.misses += 1
            counters.bytesRead = max(0, counters.bytesRead - info.rawLength)
        }
        guard let current = blob else {
            countMiss()
            return .miss
        }

        let damage: BlobDamage
        switch try pipeline.read(current.info, at: try store.location(of: current.info)) {
        case .success(let value):
            if key != nil { counters.bytesRead += value.count - info.rawLength }
            return .value(value)
        case .failure(let failure): damage = failure
        }
        dropEntries(of: current.id)
        counters.corruptReads += 1
        countMiss()
        return .damaged(.corruptBlob(id: current.id, path: store.describe(current.info), reason: damage.detail))
    }

    /// `index.slot(of:)` without copying the index: its closure, in a method of the index,
    /// captures the whole struct (a retain of each of its arrays on every lookup), where this
    /// one captures only the engine. It starts loading the entry's blob record too: most
    /// lookups by key are reads, which look at it next.
    func slot(of key: String) -> Int32? {
        var key = key
        return key.withUTF8 { index.slot(ofKeyBytes: UnsafeRawBufferPointer($0), prefetchingBlob: true) }
    }

    // MARK: Remove

    /// Drops one entry, journaling why; its blob goes at the end of the operation if that was
    /// its last reference.
    func remove(slot: Int32, reason: RemovalReason) {
        index.withKeyBytes(at: slot) { journal.appendRemove(keyBytes: $0, reason: reason) }
        if recordsChanges { madeChanges.append(.removed(key: index.key(at: slot), reason: reason)) }
        switch reason {
        case .evicted:
            counters.evictions += 1
            if telemetry.metrics != nil { telemetry.evicted(key: index.key(at: slot)) }
        case .expired: counters.expirations += 1
        case .explicit, .damaged, .cleared: break
        }
        release(index.remove(slot: slot))
    }

    /// Evicts least recently used unpinned entries until the totals are within the limits.
    func evictToLimits() {
        while isOverLimits, index.oldest >= 0 {
            remove(slot: index.oldest, reason: .evicted)
        }
        if !namespaceLimits.isEmpty { evictToNamespaceLimits() }
    }

    /// Evicts each capped namespace's least recently used unpinned entries until it is within
    /// its cap: one walk of the LRU list from the oldest end.
    private func evictToNamespaceLimits() {
        namespacesOverPinned = namespacesOverPinned.filter { storedBytesOverCap(of: $0.key) != nil }
        var over = Set(namespaceLimits.keys.filter(isOverLimit))
        var cursor = index.oldest
        while !over.isEmpty, cursor >= 0 {
            let next = index.entry(at: cursor).newer
            if let prefix = index.withKeyBytes(at: cursor, NamespaceKey.prefix(ofRaw:)), over.contains(prefix) {
                remove(slot: cursor, reason: .evicted)
                if storedBytesOverCap(of: prefix) == nil { over.remove(prefix) }
            }
            cursor = next
        }
        for prefix in over { namespacesOverPinned[prefix] = storedBytesOverCap(of: prefix) }
    }

    /// The bytes the namespace with `prefix` holds when they exceed the cap this open set for it.
    private func storedBytesOverCap(of prefix: [UInt8]) -> Int? {
        guard let max = namespaceLimits[prefix], let stored = index.namespaces.usage[prefix]?.storedBytes, stored > max else {
            return nil
        }
        return stored
    }

    /// Whether the namespace with `prefix` holds more than its cap and eviction may help.
    private func isOverLimit(_ prefix: [UInt8]) -> Bool {
        guard let stored = storedBytesOverCap(of: prefix) else { return false }
        return namespacesOverPinned[prefix] != stored
    }

    var isOverLimits: Bool {
        if let max = limits.maxStoredBytes, index.storedBytes > max { return true }
        if let max = limits.maxEntries, index.entryCount > max { return true }
        return false
    }

    /// Whether a namespace holds more than the cap this open set for it.
    /// (The empty check first: it keeps the hot path free of the closure the search makes.)
    var isOverNamespaceLimits: Bool {
        !namespaceLimits.isEmpty && namespaceLimits.keys.contains(where: isOverLimit)
    }
}
