import SystemPackage

/// The cache's mutable state and every change to it that must be atomic: index, journal,
/// pack appends, publishing and deleting blobs. Knows nothing of other opens of the directory
/// (`DirectorySharing` holds it and brings it up to date); never hashes or compresses (the
/// engine does that first, outside the lock, with `pipeline`).
///
/// Every operation that writes runs through `perform`, which ends it one way
/// (docs/RELIABILITY.md): evict to the limits, write the journal records (fsynced as the
/// durability mode promises), only then delete what the records made unneeded. Nothing is
/// destroyed before the records that make it safe are down.
/// `@unchecked Sendable`: it is only ever touched inside the engine's in-process lock.
final class CacheState: @unchecked Sendable {
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
    /// The index itself: only `index` and `CacheState+DeferredRestore` use it.
    var restoredIndex = CacheIndex()
    /// The snapshot an open mapped but has not restored yet (`CacheState+DeferredRestore`).
    var pendingRestore: PendingRestore?
    /// Reads made before a deferred restore whose accesses are due for the journal: taken by
    /// the directory's sharing, which journals them at its next operation under the flock.
    var readsDueForJournal: [(key: String, time: Int64)] = []
    /// A deferred restore fell back to replaying the journal: the open's checks (entries past
    /// the newest segment's end, expired entries) run at the next operation under the flock.
    var pendingOpenChecks = false
    let store: BlobStore
    var journal: JournalFile
    var limits: BlobCache.Limits
    let clock: any CacheClock
    let accessInterval: Int64
    /// Whether the index protects used entries (`EvictionPolicy.segmentedLRU`).
    let segmented: Bool
    /// This open's counts; `lifetimeCounters` adds those saved by earlier opens.
    var counters = BlobCache.Counters()
    /// The counts earlier opens saved in `DIR/stats`, read when first asked for (by
    /// `statistics()`, `totals()` or the final figures a clean close keeps), not by the open:
    /// in a fresh process, that first JSON decoding took 8% of the samples of opening a cache
    /// of 100,000 entries. The open returns sooner; a clean close still pays it.
    lazy var savedCounters = BlobCache.Counters.saved(in: files, io: io)
    /// Journal bytes the snapshot file on disk reflects; `nil` when there is none that matches.
    var snapshotCoverage: Int64?
    /// Journal growth past the snapshot below which a close writes none (`Configuration.snapshotThreshold`).
    let snapshotThreshold: Int64
    /// The least journal growth past the snapshot that makes a checkpoint due (`checkpointThreshold`).
    let checkpointMinimum: Int64
    /// After a failed checkpoint: the journal (its salt) and size below which none is tried again.
    var checkpointBackoff: (salt: UInt64, size: Int64)?
    var lifetimeCounters: BlobCache.Counters { savedCounters + counters }

    /// Decoded values kept in memory, by blob id (`Configuration.memoryLimit`).
    var memory: MemoryTier
    /// Bumped whenever a blob may stop being stored (its last entry went, here or in another
    /// open). An id names a value only while its blob is stored: once it is gone, another value
    /// with the same MD5 may be stored under it. A value read outside the lock is offered to
    /// the memory tier only if this did not move since its ticket (`ReadTicket.releases`).
    var releases: UInt64 = 0
    /// Where changes go (`BlobCache.changes(forKeysWithPrefix:)`); they are recorded only
    /// while somebody listens.
    let changeHub: ChangeHub?
    /// Changes made by the running operation (and by others' records it replayed), published
    /// by the engine before it lets go of its lock.
    var madeChanges: [BlobCache.Change] = []
    /// Byte caps of namespaces set in this open, by key prefix (`NamespaceKey`).
    var namespaceLimits: [[UInt8]: Int] = [:]
    /// Namespaces an eviction pass could not bring under their caps (pinned entries), with
    /// the bytes they held then: not over again until those change, so that they do not send
    /// every operation to the flock and a walk of the LRU list.
    var namespacesOverPinned: [[UInt8]: Int] = [:]
    /// Logs recovery and maintenance events; metrics of hits, misses, bytes and latency.
    let telemetry: Telemetry

    /// Whether changes are being recorded now.
    var recordsChanges: Bool { changeHub?.isObserved ?? false }

    #if BLOBCACHE_TESTING
    /// Maintenance runs that failed after their operation had committed (the operation
    /// itself succeeded): tests check that a failure was met and survived.
    var maintenanceFailures = 0
    #endif
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

    /// The state an open replayed or restored: `index` as it stands, `configuration` for the
    /// clock, the memory tier and the journal's thresholds.
    init(files: CacheFiles, io: FileIO, pipeline: BlobPipeline, store: BlobStore, journal: JournalFile, index: CacheIndex,
         snapshotCoverage: Int64?, limits: BlobCache.Limits, configuration: BlobCache.Configuration,
         changeHub: ChangeHub?, telemetry: Telemetry) {
        self.files = files
        self.io = io
        self.pipeline = pipeline
        self.store = store
        self.journal = journal
        segmented = configuration.eviction == .segmentedLRU
        restoredIndex = index
        restoredIndex.useSegments(segmented)
        self.snapshotCoverage = snapshotCoverage
        self.limits = limits
        clock = configuration.clock
        accessInterval = Nanoseconds.from(configuration.accessJournalInterval)
        snapshotThreshold = configuration.snapshotThreshold
        checkpointMinimum = configuration.checkpointMinimum
        memory = MemoryTier(limit: configuration.memoryLimit)
        self.changeHub = changeHub
        self.telemetry = telemetry
    }

    func now() -> Int64 { Nanoseconds.from(clock.now()) }

    // MARK: The commit path

    /// Runs one operation and ends it: eviction, the journal write (and fsync per the
    /// durability mode), then the deletions the operation queued. A failure in the body still
    /// commits what the body already changed. Pack GC and journal compaction are not part of
    /// it: the engine runs them after the operation, mostly outside the lock (`maintenanceDue`).
    /// Only a `CacheWriter` calls it: whoever writes holds the flock.
    func perform<T>(_ body: () throws -> T) throws -> T {
        let outcome = Result { try body() }
        evictToLimits()
        try commitPending()
        return try outcome.get()
    }

    /// Writes what the running operation left pending, if anything (nothing written, nothing
    /// to delete, as for most reads: nothing to commit).
    func commitPending() throws {
        if journal.hasPending || !disposals.isEmpty { try commitRecords() }
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
}
