import Synchronization

/// The engine of one open cache: its state (`CacheState`), shared with the directory's other
/// opens (`DirectorySharing`), behind the in-process lock. The facade asks it for whole
/// operations (a set, a get, a close, maintenance); each is built on two entry points: `read`,
/// which hands its body a `CacheReader` that cannot write, and `write`, which hands it a
/// `CacheWriter`, holding the flock, and ends it through the commit path.
///
///     let engine = try Engine(files: files, io: io, lock: lock, configuration: configuration, telemetry: telemetry)
///     let id = try engine.set(raw, key: "k", expiry: .never, pinned: false)
final class Engine: Sendable {
    /// The open's state and its sharing, behind the lock every operation takes; `nil` once closed.
    private let guarded: Locked<DirectorySharing?>
    /// Held by whoever runs maintenance (pack collection, journal rewrite) or an operation that
    /// must not overlap one (compact, close); taken before the engine's lock, never while
    /// holding it. Counts the maintenance runs.
    let maintenanceGate = Locked(0)
    /// `DIR/lock`: its flock is held for each operation that writes, and by maintenance for
    /// all its steps (other processes' writers wait meanwhile; this one's threads go on).
    let directoryLock: DirectoryLock
    /// Hashing, encoding, staging and reading: the work done outside the lock.
    let pipeline: BlobPipeline
    /// The consumers of `BlobCache.changes(forKeysWithPrefix:)`.
    let changeHub: ChangeHub
    /// Logger and metrics.
    let telemetry: Telemetry
    /// What opening the cache found and repaired.
    let openReport: BlobCache.OpenReport
    /// The statistics at the close, for `statistics()` after it.
    let finalStatistics = Locked(BlobCache.Statistics(sinceOpen: BlobCache.Counters(), lifetime: BlobCache.Counters()))
    /// Whether a get may still find the restore deferred (`CacheState.readBeforeRestore`):
    /// cleared by the first get that finds it done, so later gets take the lock once.
    let mayReadBeforeRestore: Atomic<Bool>
    /// Whether values read from disk are offered to the memory tier.
    let remembersValues: Bool
    /// The directory as the user named it (for messages).
    let directory: String

    /// Opens the cache state in `files` under `lock`'s flock (taken here), with the limits
    /// saved in the directory where `configuration` sets none.
    init(directory: String, files: CacheFiles, io: FileIO, lock: DirectoryLock, configuration: BlobCache.Configuration,
         telemetry: Telemetry) throws {
        let changeHub = ChangeHub()
        let (sharing, report) = try lock.withExclusive {
            let alone = lock.isAlone
            lock.joinOpens()
            let crashed = lock.markOpen(alone: alone)
            let saved = try BlobCache.defaultLimits(in: files, io: io)
            let limits = BlobCache.Limits(maxStoredBytes: configuration.maxStoredBytes ?? saved.maxStoredBytes,
                                          maxEntries: configuration.maxEntries ?? saved.maxEntries)
            return try DirectorySharing.open(files: files, io: io, configuration: configuration, limits: limits, lock: lock,
                                             alone: alone, previousHolderCrashed: crashed, changeHub: changeHub,
                                             telemetry: telemetry)
        }
        guarded = Locked(sharing)
        directoryLock = lock
        pipeline = sharing.state.pipeline
        self.changeHub = changeHub
        self.telemetry = telemetry
        openReport = report
        mayReadBeforeRestore = Atomic(sharing.state.pendingRestore != nil)
        remembersValues = configuration.memoryLimit > 0
        self.directory = directory
    }

    /// Fails with `wrongEncryptionKey` (or `encrypted`) when the journal in `files` was written
    /// under another key than `configuration`'s: before the lock file or anything else is touched.
    static func checkKey(of configuration: BlobCache.Configuration, against files: CacheFiles, io: FileIO) throws {
        try JournalFile.peekHeader(files: files, io: io)?
            .requireKey(configuration.encryption.map(CacheCipher.init), cache: files.root.string)
    }

    // MARK: The two entry points

    /// What a read needs first.
    enum ReadScope {
        /// The index restored and caught up with every other open's committed records.
        case caughtUp
        /// This open's own memory, settings and counters: no restore, no catch-up.
        case thisOpen
    }

    /// The maintenance a read runs after it, with the lock released (`maintain`).
    enum AfterRead {
        /// None: a query.
        case nothing
        /// A get's: a journal rewrite when due twice over, never a pack collection or a
        /// checkpoint (`CacheState.maintenanceDue(reader: true)`), whether or not it wrote.
        case getMaintenance
        /// A write's, when the read had to write (a set that found its value stored).
        case writeMaintenanceIfItWrote
    }

    /// Runs `body` with read access under the engine's lock: without the flock when no other
    /// open changed anything (or only appended records, replayed here), else caught up under
    /// it. A `.write` from `body` runs with a `CacheWriter` in the same hold of the lock.
    ///
    ///     let keys = try engine.read { .answer($0.keys()) }
    func read<T>(_ scope: ReadScope = .caughtUp, then after: AfterRead = .nothing,
                 _ body: (CacheReader) throws -> Reading<T>) throws -> T {
        var due: CacheState.Maintenance?
        /// Notes what is due after the read, as `after` asks.
        func noteMaintenance(of state: CacheState, wrote: Bool) {
            switch after {
            case .nothing: break
            case .getMaintenance: due = state.maintenanceDue(reader: true)
            case .writeMaintenanceIfItWrote: if wrote { due = state.maintenanceDue(reader: false) }
            }
        }
        /// Runs a read's writing part through the commit path.
        func write(_ writing: (CacheWriter) throws -> T, with writer: CacheWriter) throws -> T {
            defer { noteMaintenance(of: writer.state, wrote: true) }
            return try writer.commit { try writing(writer) }
        }
        let value = try withOpenSharing { sharing in
            if scope == .caughtUp, sharing.state.pendingRestore != nil { try sharing.finishRestoring() }
            if scope == .thisOpen || sharing.mayReadWithoutFlock {
                switch try body(CacheReader(sharing.state, deferringAccessesTo: sharing)) {
                case .answer(let value):
                    noteMaintenance(of: sharing.state, wrote: false)
                    return value
                case .write(let writing): return try sharing.underFlock { try write(writing, with: $0) }
                }
            }
            return try sharing.underFlock { writer in
                switch try body(writer.reader) {
                case .answer(let value):
                    // What the reader journaled (accesses) is written as any operation's records are.
                    try writer.state.commitPending()
                    noteMaintenance(of: writer.state, wrote: false)
                    return value
                case .write(let writing): return try write(writing, with: writer)
                }
            }
        }
        if due != nil { maintain(reader: after == .getMaintenance) }
        return value
    }

    /// Runs `body` with write access: under the engine's lock and the flock, caught up with
    /// other opens first, and through the commit path; then, with the lock released, the
    /// maintenance it made due. Not `committing`: a step of maintenance, or a change of this
    /// open's own state, that neither evicts nor deletes anything and is followed by no
    /// maintenance (records it appends are still written before the flock goes).
    ///
    ///     try engine.write { $0.removeAll(includingPinned: false) }
    func write<T>(committing: Bool = true, _ body: (CacheWriter) throws -> T) throws -> T {
        let (value, due) = try withOpenSharing { sharing in
            try sharing.underFlock { writer in
                committing ? (try writer.commit { try body(writer) }, writer.state.maintenanceDue(reader: false)) : (try body(writer), nil)
            }
        }
        if due != nil { maintain(reader: false) }
        return value
    }

    /// Runs `body` on the open engine under its lock, publishing the changes it made before
    /// the lock goes (so consumers get them in the order they were made).
    private func withOpenSharing<T>(_ body: (DirectorySharing) throws -> T) throws -> T {
        try guarded.withLock { sharing in
            guard let sharing else { throw BlobCacheError.closed }
            if let failure = sharing.state.journal.failure { throw failure }
            defer { if !sharing.state.madeChanges.isEmpty { publishChanges(of: sharing.state) } }
            return try body(sharing)
        }
    }

    private func publishChanges(of state: CacheState) {
        changeHub.publish(state.madeChanges)
        state.madeChanges.removeAll()
    }

    // MARK: Under the lock alone

    /// Runs an open's last steps (`body`) under the lock, leaving the engine closed: whatever
    /// happens, or `onlyIfItSucceeds`; `nil` when it was closed already.
    private func closing<T>(onlyIfItSucceeds: Bool = false, _ body: (DirectorySharing) throws -> T) rethrows -> T? {
        try guarded.withLock { sharing in
            guard let open = sharing else { return nil }
            if !onlyIfItSucceeds { sharing = nil }
            defer { if !open.state.madeChanges.isEmpty { publishChanges(of: open.state) } }
            let result = try body(open)
            sharing = nil
            return result
        }
    }

    /// Runs `body` with this open's state when the engine's lock is free now and the engine
    /// open (`nil` otherwise, without waiting): the memory tier's fast path.
    private func ifAvailable<T>(_ body: (DirectorySharing) -> T?) -> T? {
        guarded.withLockIfAvailable { sharing in
            guard let sharing, sharing.state.journal.failure == nil else { return nil }
            return body(sharing)
        } ?? nil
    }

    /// The value of `key` (raw) when the memory tier can answer at once, without any file I/O
    /// and without waiting for the lock: `nil` when another thread holds it, the index must
    /// catch up with other processes first, or the value is not in memory.
    func rememberedValue(forKey key: String) -> [UInt8]? {
        ifAvailable { sharing in CacheReader(sharing.state, deferringAccessesTo: sharing).rememberedValue(forKey: key) }
    }

    /// Empties the memory tier, even after a failed journal write (memory, not the cache's files).
    func purgeMemory() {
        guarded.withLock { $0?.state.memory.removeAll() }
    }

    /// Whether the engine was closed.
    var isClosed: Bool { guarded.withLock { $0 == nil } }

    /// This open's counts and the lifetime ones (also after a failed journal write); `nil`
    /// once closed (`finalStatistics` then has those at the close).
    var statisticsIfOpen: BlobCache.Statistics? { guarded.withLock { $0?.state.statistics } }

    // MARK: The end of an open: a close, or a rekey, which ends it under the new key

    /// Writes out recency, syncs the journal, writes a snapshot when worth it, saves the
    /// counts and releases the directory; nothing when closed already. Waits for maintenance
    /// running on another thread to finish its steps. `remoteRejections`: the remote tier's
    /// refusals, kept with the cache's lifetime counts.
    func close(remoteRejections: Int) throws {
        try maintenanceGate.withLock { _ in
            try closing { sharing in
                let state = sharing.state
                state.counters.remoteRejections = remoteRejections
                finalStatistics.withLock { $0 = state.statistics }
                // Closing the file gives up the presence lock: the last open to close is alone.
                defer { directoryLock.close() }
                // After a failed journal write there is nothing safe to add: reopening replays the
                // journal as it stands.
                guard state.journal.failure == nil else { return }
                // A restore still deferred stays so when no other open changed anything: closing
                // after a few gets does not read the whole snapshot.
                try sharing.underFlock(keepingDeferredRestore: true) { writer in
                    try writer.state.closeCleanly()
                    directoryLock.markClosed(cleanly: true)
                }
            }
        }
    }

    /// Encrypts everything again under `newCipher` (`CacheState.rekey`) and ends this open:
    /// nothing more is written through it, since its index and pipeline speak the old key.
    /// Fails with `inUse` while another open of the directory exists (the engine stays open).
    func rekeyAndClose(to newCipher: CacheCipher) throws -> (blobs: Int, droppedEntries: Int) {
        // The rekey and the end of this open under one hold of the lock: no operation of
        // another thread can slip in between and write with the old key into the new journal.
        let rekeyed = try maintenanceGate.withLock { _ in
            try closing(onlyIfItSucceeds: true) { sharing -> (blobs: Int, droppedEntries: Int) in
                if let failure = sharing.state.journal.failure { throw failure }
                let result = try sharing.underFlock { writer in
                    guard directoryLock.isAlone else { throw BlobCacheError.inUse(path: directory, pid: nil) }
                    return try writer.commit { try writer.state.rekey(to: newCipher) }
                }
                finalStatistics.withLock { $0 = sharing.state.statistics }
                // (A clean close's snapshot would describe the old blobs under the new salt.)
                try? sharing.underFlock { _ in directoryLock.markClosed(cleanly: true) }
                directoryLock.close()
                return result
            }
        }
        guard let rekeyed else { throw BlobCacheError.closed }
        return rekeyed
    }

    #if BLOBCACHE_TESTING
    /// Runs `body` with this open's sharing (`nil` once closed) under the engine's lock, or
    /// returns `nil` at once when another thread holds it (`waiting` false): for tests.
    func inspect<T>(waiting: Bool = true, _ body: (DirectorySharing?) -> T) -> T? {
        waiting ? guarded.withLock { body($0) } : guarded.withLockIfAvailable { body($0) }
    }
    #endif
}
