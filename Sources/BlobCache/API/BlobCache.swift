import SystemPackage
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A content-addressed, compressed, journaled disk cache.
///
/// Values are identified by the MD5 of their bytes and stored once however many keys share
/// them; small ones are packed into segment files, large ones get a file each. An append-only
/// journal indexes the keys and survives crashes; a hard byte cap evicts least recently used
/// entries. Thread-safe: hashing, compressing and reading happen outside the index lock.
///
///     let cache = try BlobCache(directory: "/tmp/my-cache")
///     try cache.set(Array("hello".utf8), forKey: "greeting")
///     let bytes = try cache.bytes(forKey: "greeting")   // [104, 101, 108, 108, 111]
///     try cache.close()
public final class BlobCache: Sendable {
    /// The cache's directory.
    public let directory: String
    /// What opening the cache found and repaired.
    public let openReport: OpenReport

    /// The engine, behind the lock every operation takes.
    let state: Locked<CacheEngine?>
    /// Held by whoever runs maintenance (pack collection, journal rewrite) or an operation that
    /// must not overlap one (compact, close); taken before `state`, never while holding it.
    /// Counts the maintenance runs.
    let maintenanceGate = Locked(0)
    /// `DIR/lock`: its flock is held for each operation that writes, and by maintenance for
    /// all its steps (other processes' writers wait meanwhile; this one's threads go on).
    let directoryLock: DirectoryLock
    /// Hashing, encoding, staging and reading: the work done outside the lock.
    let pipeline: BlobPipeline
    let defaultExpiry: Expiry
    /// The consumers of `changes(forKeysWithPrefix:)`.
    let changeHub = ChangeHub()
    /// The loads `value(forKey:expiry:loadingWith:)` has running, by raw key.
    let flights = FlightTable()
    /// Logger and metrics.
    let telemetry: Telemetry
    /// Whether values read from disk are offered to the memory tier.
    let remembersValues: Bool
    /// The second tier (`Configuration.remote`), when there is one.
    let remote: RemoteTier?
    /// The configuration's clock (for the remote tier's expiry times).
    let clock: any CacheClock
    /// The configuration the cache was opened with (a rekey reopens with it and the new key).
    let openConfiguration: Configuration
    /// `statistics()` after `close()`: the figures at the close.
    let finalStatistics = Locked(Statistics(sinceOpen: Counters(), lifetime: Counters()))
    /// Whether a get may still find the restore deferred (`CacheEngine.readBeforeRestore`):
    /// cleared by the first get that finds it done, so later gets take the lock once.
    let mayReadBeforeRestore = Atomic(false)

    /// Keys are non-empty, at most this many bytes of UTF-8, and do not start with U+0000.
    public static let maxKeyBytes = 1 << 20

    /// Opens the cache in `directory`, creating it when `createDirectory` is true (the default).
    /// Any number of opens, in this process and others, share a directory: each sees the
    /// others' writes at its next operation. Fails with `inUse` when another process holds
    /// `DIR/lock` for longer than `configuration.lockTimeout`.
    ///
    ///     let cache = try BlobCache(directory: "/var/cache/thumbnails")
    public init(directory: String, configuration: Configuration = Configuration(), createDirectory: Bool = true) throws {
        try configuration.validate()
        // A key that does not fit the cache fails here, before the lock file or anything else
        // is touched (and again under the lock, in case the journal changed meanwhile).
        let files = CacheFiles(root: CachePath(normalizing: directory))
        try CacheEngine.peekJournalHeader(files: files, io: FileIO(configuration.fileSystem))?
            .requireKey(configuration.encryption.map(CacheCipher.init), cache: files.root.string)
        let telemetry = Telemetry(logger: configuration.logger, factory: configuration.metricsFactory)
        try Self.prepareDirectory(files.root, create: createDirectory,
                                  io: FileIO(configuration.fileSystem, sharedWithGroup: configuration.shareWithGroup))
        let io = FileIO(configuration.fileSystem).matchingAccess(of: files.root)
        let lock = try DirectoryLock.open(files, io: io, timeout: configuration.lockTimeout)
        var deferred = false
        do {
            let (engine, report) = try lock.withExclusive {
                let alone = lock.isAlone
                lock.joinOpens()
                let crashed = lock.markOpen(alone: alone)
                let saved = try Self.defaultLimits(in: files, io: io)
                let limits = Limits(maxStoredBytes: configuration.maxStoredBytes ?? saved.maxStoredBytes,
                                    maxEntries: configuration.maxEntries ?? saved.maxEntries)
                return try CacheEngine.open(files: files, io: io, configuration: configuration, limits: limits,
                                            lock: lock, alone: alone, previousHolderCrashed: crashed)
            }
            engine.memory = MemoryTier(limit: configuration.memoryLimit)
            engine.changeHub = changeHub
            engine.telemetry = telemetry
            deferred = engine.pendingRestore != nil
            self.state = Locked(engine)
            self.openReport = report
            self.pipeline = engine.pipeline
        } catch {
            lock.close()
            throw error
        }
        self.directoryLock = lock
        self.directory = directory
        self.defaultExpiry = configuration.defaultExpiry
        self.telemetry = telemetry
        self.remembersValues = configuration.memoryLimit > 0
        self.clock = configuration.clock
        self.openConfiguration = configuration
        self.remote = configuration.remote.map {
            RemoteTier(store: $0, backoff: configuration.remoteBackoff, queueLimit: configuration.remoteQueueLimit,
                       codec: configuration.codec, clock: configuration.clock, logger: configuration.logger,
                       authentication: configuration.remoteAuthenticationKey)
        }
        mayReadBeforeRestore.store(deferred, ordering: .relaxed)
        telemetry.logOpen(openReport, directory: directory)
    }

    deinit { try? close() }

    // MARK: Keyed values

    /// Stores `value` under `key`, replacing any value it had, and returns the value's id.
    /// When the same bytes are already stored (under any key), nothing but the journal record
    /// is written. Evicts least recently used entries as needed to stay within the limits.
    ///
    ///     try cache.set(Array(data), forKey: "avatar/42", expiry: .after(.seconds(86_400)))
    @discardableResult
    public func set(_ value: some ContiguousBytes, forKey key: String, expiry: Expiry? = nil, pinned: Bool = false) throws -> BlobID {
        try Self.validate(key)
        return try set(value, forRawKey: key, expiry: expiry, pinned: pinned)
    }

    /// `set` of a key already validated (and made raw by a namespace).
    /// `remembering`: the value goes into the memory tier too (a loaded value, about to be read).
    func set(_ value: some ContiguousBytes, forRawKey key: String, expiry: Expiry?, pinned: Bool,
             remembering: Bool = false) throws -> BlobID {
        let start = telemetry.startTime
        defer { telemetry.finished(set: true, key: key, since: start) }
        let rule = expiry ?? defaultExpiry
        return try value.withUnsafeBytes { raw in
            let id = try put(raw, key: key, expiry: rule, pinned: pinned, remembering: remembering)
            remote?.send(raw, id: id, key: key, expiry: rule.deadline(from: Nanoseconds.from(clock.now())))
            return id
        }
    }

    /// The value stored under `key`, or `nil` when there is none or it has expired. A damaged
    /// blob throws `corruptBlob` (and its entries are dropped); wrong bytes are never returned.
    ///
    ///     if let bytes = try cache.bytes(forKey: "avatar/42") { show(bytes) }
    public func bytes(forKey key: String) throws -> [UInt8]? {
        try bytes(forRawKey: key)
    }

    /// `bytes(forKey:)` of a raw key (a namespace's, or the cache's own).
    func bytes(forRawKey key: String) throws -> [UInt8]? {
        let start = telemetry.startTime
        defer { telemetry.finished(set: false, key: key, since: start) }
        let ticket: CacheEngine.ReadTicket?
        // Straight after an open, from the snapshot it has not restored yet, when it can.
        let early = mayReadBeforeRestore.load(ordering: .relaxed)
            ? try withOpenEngine(restoringFirst: false, { try $0.readBeforeRestore(key: key) }) : .needsIndex
        switch early {
        case .found(let found): ticket = found
        case .absent: ticket = nil
        case .needsIndex, .restored:
            if case .restored = early { mayReadBeforeRestore.store(false, ordering: .relaxed) }
            ticket = try perform(reader: true, { try $0.beginRead(key: key) })
        }
        guard let ticket else { return remote == nil ? nil : try remoteValue(forRawKey: key) }
        return try finishRead(ticket, key: key)
    }

    /// The value stored under `key` as `Data`, for Foundation code; see `bytes(forKey:)`.
    ///
    ///     let image = try cache.data(forKey: "avatar/42").flatMap(UIImage.init(data:))
    public func data(forKey key: String) throws -> Data? {
        try bytes(forKey: key).map { Data($0) }
    }

    /// Whether `key` holds an unexpired value (does not count as an access).
    ///
    ///     if try cache.contains("avatar/42") { … }
    public func contains(_ key: String) throws -> Bool {
        try entry(forKey: key) != nil
    }

    /// The metadata of `key`'s entry, or `nil` (does not count as an access).
    ///
    ///     let size = try cache.entry(forKey: "avatar/42")?.size
    public func entry(forKey key: String) throws -> EntryInfo? {
        try lookup { engine in
            guard let slot = engine.index.slot(of: key), engine.index.entry(at: slot).expiry > engine.now() else { return nil }
            return engine.info(at: slot)
        }
    }

    /// Removes `key`'s entry; returns whether there was one.
    ///
    ///     try cache.removeValue(forKey: "avatar/42")
    @discardableResult
    public func removeValue(forKey key: String) throws -> Bool {
        try removeValue(forRawKey: key)
    }

    /// Removes every entry; pinned ones only when `includingPinned`.
    ///
    ///     try cache.removeAll()
    public func removeAll(includingPinned: Bool = false) throws {
        try perform { $0.removeAll(includingPinned: includingPinned) }
    }

    /// Removes every expired entry now (reads and opens also drop them); returns how many.
    ///
    ///     let swept = try cache.removeExpired()
    @discardableResult
    public func removeExpired() throws -> Int {
        try perform { $0.removeExpired() }
    }

    /// Evicts every entry (any namespace's, content-addressed ones too; pinned ones never) not
    /// read or written since `date`, as ccache's `--evict-older-than` and an age limit do;
    /// returns how many were evicted (counted in `statistics().evictions`).
    ///
    ///     try cache.evictEntries(unusedSince: Date().addingTimeInterval(-86_400))   // a day
    @discardableResult
    public func evictEntries(unusedSince date: Date) throws -> Int {
        try perform { $0.evictUnused(before: Nanoseconds.from(date)) }
    }

    /// Every key, least recently used first (pinned keys first of all). Content-addressed
    /// entries (`store(_:)`) are not listed.
    ///
    ///     for key in try cache.keys() { print(key) }
    public func keys() throws -> [String] {
        try lookup { engine in
            engine.index.journalOrder().map { engine.index.key(at: $0) }
                .filter { !$0.hasPrefix(CacheEngine.contentAddressedKeyPrefix) }
        }
    }

    /// The metadata of every entry, least recently used first (pinned entries first of all).
    ///
    ///     for entry in try cache.entries() { print(entry.key, entry.size) }
    public func entries() throws -> [EntryInfo] {
        try lookup { engine in engine.index.journalOrder().map { engine.info(at: $0) } }
    }

    /// Sizes, counts, limits and counters.
    ///
    ///     print(try cache.totals().storedBytes)
    public func totals() throws -> Totals {
        try lookup { $0.totals() }
    }

    /// Changes the limits of this open cache, evicting at once if they are smaller.
    ///
    ///     try cache.setLimits(.init(maxStoredBytes: 100_000_000))
    public func setLimits(_ limits: Limits) throws {
        try perform { $0.limits = limits }
    }

    /// Rewrites the journal to its live entries in LRU order, removes expired entries, deletes
    /// dangling blobs, stale temporary files and empty shard directories, and reclaims every dead
    /// pack byte. With `codec`, every blob stored with another codec than the one it would get
    /// now is re-encoded (ids do not change): `codec` below the configuration's
    /// `compression.storingRawFrom`, raw from it, so a cache opened with `.fastReads` and
    /// compacted with `.lz4` ends with its large values raw and its small ones in LZ4. Safe to
    /// interrupt at any point.
    ///
    ///     let report = try cache.compact(recompressingTo: .zlib(level: 9))
    @discardableResult
    public func compact(recompressingTo codec: Codec? = nil) throws -> CompactionReport {
        try maintenanceGate.withLock { _ in try withEngine { engine in try engine.perform { try engine.compact(recompressingTo: codec) } } }
    }

    /// Writes out recency, syncs the journal and releases the directory. Later calls throw
    /// `closed`; closing twice is harmless.
    ///
    ///     try cache.close()
    public func close() throws {
        // Delivers (or, with the remote down, drops) what the write-behind queue holds.
        remote?.flush()
        // Ends the change streams whatever happens (outside the lock: a stream's end calls back).
        defer { changeHub.finishAll() }
        // Waits for maintenance running on another thread to finish its steps.
        try maintenanceGate.withLock { _ in try closeEngine() }
    }

    private func closeEngine() throws {
        try state.withLock { engine in
            guard let open = engine else { return }
            engine = nil
            // The remote tier's refusals are kept with the cache's lifetime counts.
            open.counters.remoteRejections = remote?.counters.rejected ?? 0
            finalStatistics.withLock { $0 = open.statistics }
            // Closing the file gives up the presence lock: the last open to close is alone.
            defer { directoryLock.close() }
            // After a failed journal write there is nothing safe to add: reopening replays the
            // journal as it stands.
            guard open.journal.failure == nil else { return }
            // A restore still deferred stays so when no other open changed anything: closing
            // after a few gets does not read the whole snapshot.
            try open.exclusively(keepingDeferredRestore: true) {
                if open.pendingRestore != nil {
                    open.journalReadsBeforeRestore()
                    try open.journal.flush()
                } else {
                    try open.persistRecency()
                    try? open.compactJournalIfRedundant()
                }
                try open.journal.sync()
                open.writeSnapshotIfWorthIt()
                try? open.saveCounters()
                directoryLock.markClosed(cleanly: true)
            }
        }
    }

    // MARK: Content-addressed values

    /// Stores `value` by content alone and returns its id (an entry with no key, subject to
    /// the limits like any other). Storing the same bytes again changes nothing but recency.
    ///
    ///     let id = try cache.store(bytes)
    @discardableResult
    public func store(_ value: some ContiguousBytes) throws -> BlobID {
        try value.withUnsafeBytes { raw in
            let id = pipeline.hasher.id(of: raw)
            try put(raw, key: CacheEngine.contentAddressedKeyPrefix + id.hex, expiry: defaultExpiry, pinned: false, knownID: id)
            remote?.send(raw, id: id, key: nil, expiry: defaultExpiry.deadline(from: Nanoseconds.from(clock.now())))
            return id
        }
    }

    /// The value with id `id`, whichever key (or none) stored it; `nil` when not stored.
    ///
    ///     let bytes = try cache.bytes(for: id)
    public func bytes(for id: BlobID) throws -> [UInt8]? {
        guard let ticket = try lookup({ try $0.beginRead(id: id) }) else {
            return remote == nil ? nil : try remoteValue(for: id)
        }
        return try finishRead(ticket)
    }

    /// Removes the content-addressed entry for `id` (keys that share the blob keep it).
    ///
    ///     try cache.removeBlob(id)
    @discardableResult
    public func removeBlob(_ id: BlobID) throws -> Bool {
        try removeValue(forKey: CacheEngine.contentAddressedKeyPrefix + id.hex)
    }

    // MARK: Internals

    /// Runs `body` on the open engine under the lock and `DIR/lock`'s flock, caught up with
    /// other processes first (`CacheEngine.exclusively`).
    func withEngine<T>(_ body: (CacheEngine) throws -> T) throws -> T {
        try withOpenEngine { engine in try engine.exclusively { try body(engine) } }
    }

    /// Runs `body`, which changes nothing on disk, on the open engine under the lock; without
    /// the flock when no other process changed anything since the last operation.
    func lookup<T>(_ body: (CacheEngine) throws -> T) throws -> T {
        try withOpenEngine { engine in try engine.read { try body(engine) } }
    }

    /// Runs `body` on the open engine under the lock only (for this open's own settings), its
    /// index restored first unless `restoringFirst` is false (`CacheEngine.readBeforeRestore`).
    func withOpenEngine<T>(restoringFirst: Bool = true, _ body: (CacheEngine) throws -> T) throws -> T {
        try state.withLock { engine in
            guard let engine else { throw BlobCacheError.closed }
            if let failure = engine.journal.failure { throw failure }
            if restoringFirst { try engine.finishRestoring() }
            // Published before the lock goes, so consumers get changes in the order they were made.
            defer { if !engine.madeChanges.isEmpty { publishChanges(of: engine) } }
            return try body(engine)
        }
    }

    private func publishChanges(of engine: CacheEngine) {
        changeHub.publish(engine.madeChanges)
        engine.madeChanges.removeAll()
    }

    /// Runs one engine operation under the lock, through its commit path, then (with the
    /// lock released) the maintenance it made due. `reader`: the operation is a `get`, which
    /// runs without the flock when the index is current.
    func perform<T>(reader: Bool = false, _ body: (CacheEngine) throws -> T) throws -> T {
        let (result, due) = try withOpenEngine { engine in
            let operation = { (try engine.perform { try body(engine) }, engine.maintenanceDue(reader: reader)) }
            return try reader ? engine.read(operation) : engine.exclusively(operation)
        }
        if due != nil { maintain(reader: reader) }
        return result
    }

    /// `ifAbsent`: leaves an unexpired entry of `key` as it is (a remote value written back
    /// must not replace a set made while it was being fetched).
    @discardableResult
    func put(_ raw: UnsafeRawBufferPointer, key: String, expiry: Expiry, pinned: Bool, knownID: BlobID? = nil,
             ifAbsent: Bool = false, remembering: Bool = false) throws -> BlobID {
        if pipeline.cipher != nil, raw.count > CacheCipher.maxPlaintext {
            throw BlobCacheError.valueTooLarge(storedBytes: raw.count, limit: CacheCipher.maxPlaintext)
        }
        let prepared: PreparedBlob
        // A large value's staging file, made while it is hashed; deleted unless `stage` takes it.
        var stagingFile: StagingFile?
        defer { pipeline.discard(stagingFile) }
        if knownID == nil && raw.count >= Parallel.threshold {
            // Large: hash on one core while the others compress and create its file; a duplicate
            // wastes one compression and one create.
            (prepared, stagingFile) = pipeline.prepareWithStagingFile(raw)
            if try perform({ try ifAbsent && $0.holds(key) || $0.setExisting(key: key, id: prepared.id, value: raw, expiryRule: expiry, pinned: pinned, remembering: remembering) }) {
                return prepared.id
            }
        } else {
            // Small: hash first, so a duplicate costs no compression at all.
            let id = knownID ?? pipeline.hasher.id(of: raw)
            // Looked up first without the flock: a new value (the common case) takes it once.
            if try lookup({ $0.index.blob(id) != nil || ifAbsent && $0.holds(key) }),
               try perform({ try ifAbsent && $0.holds(key) || $0.setExisting(key: key, id: id, value: raw, expiryRule: expiry, pinned: pinned, remembering: remembering) }) {
                return id
            }
            prepared = pipeline.prepare(raw, id: id)
        }
        if let limit = try withOpenEngine({ $0.limits.maxStoredBytes }), prepared.imageCount > limit {
            throw BlobCacheError.valueTooLarge(storedBytes: prepared.imageCount, limit: limit)
        }
        let staged: StagedLooseBlob?
        if prepared.packed {
            staged = nil
        } else if let file = stagingFile {
            stagingFile = nil
            staged = try pipeline.stage(prepared, in: file)
        } else {
            staged = try pipeline.stage(prepared)
        }
        let published: Bool
        do {
            published = try perform { engine in
                if ifAbsent && engine.holds(key) { return false }
                return try engine.setNew(key: key, blob: prepared, value: raw, staged: staged, expiryRule: expiry, pinned: pinned,
                                         remembering: remembering)
            }
        } catch {
            pipeline.discard(staged)
            throw error
        }
        // Shared with a blob another set stored meanwhile: the staged copy is not needed.
        if !published { pipeline.discard(staged) }
        return prepared.id
    }

    private func finishRead(_ ticket: CacheEngine.ReadTicket, key: String? = nil) throws -> [UInt8]? {
        if let value = ticket.value { return value }
        switch try pipeline.read(ticket.info, at: ticket.location) {
        case .success(let value):
            // A loose file is found by its id alone: when a blob was released (here or in
            // another open) since the ticket, another value with the same MD5 may have taken
            // the id, and the file read may be it. Read again under the lock, by the key.
            if case .loose? = ticket.location, try !nothingReleased(since: ticket) {
                return try readAgainUnderLock(ticket, key: key)
            }
            if ticket.remember { remember(value, id: ticket.info.id, releases: ticket.releases) }
            return value
        case .failure:
            return try readAgainUnderLock(ticket, key: key)
        }
    }

    /// Whether no blob was released since `ticket`, here or in another open: the index caught
    /// up with every committed record and no writer inside (`isCurrent`: a writer between its
    /// release and its commit would otherwise go unseen), and `releases` unmoved. Does not
    /// finish a deferred restore (nothing local is released before one: every write restores first).
    func nothingReleased(since ticket: CacheEngine.ReadTicket) throws -> Bool {
        try withOpenEngine(restoringFirst: false) { engine in
            if !engine.isCurrent, engine.pendingRestore == nil { _ = engine.catchUpWithoutLock() }
            return engine.isCurrent && engine.releases == ticket.releases
        }
    }

    /// Reads `ticket`'s value again under the lock, where nothing can change it, resolving a
    /// keyed read by what the key holds now (`CacheEngine.blobFailed`); damage found there is
    /// real, and thrown.
    private func readAgainUnderLock(_ ticket: CacheEngine.ReadTicket, key: String?) throws -> [UInt8]? {
        switch try perform({ try $0.blobFailed(ticket.info, key: key) }) {
        case .value(let value): return value
        case .miss: return nil
        case .damaged(let error):
            telemetry.logger.warning("damaged blob dropped", metadata: ["directory": "\(directory)", "error": "\(error)"])
            throw error
        }
    }

    static func validate(_ key: String) throws {
        guard !key.isEmpty else { throw BlobCacheError.invalidKey(reason: "a key must not be empty") }
        guard key.utf8.count <= maxKeyBytes else {
            throw BlobCacheError.invalidKey(reason: "a key must be at most \(maxKeyBytes) bytes of UTF-8, got \(key.utf8.count)")
        }
        guard !key.hasPrefix(CacheEngine.contentAddressedKeyPrefix) else {
            throw BlobCacheError.invalidKey(reason: "a key must not start with U+0000 (reserved for content-addressed entries)")
        }
    }

    private static func prepareDirectory(_ path: CachePath, create: Bool, io: FileIO) throws {
        if let info = io.status(path) {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw BlobCacheError.directoryUnusable(path: path.string, reason: "it is not a directory")
            }
        } else if create {
            // Made once per open, so a `FilePath` may take the path apart.
            var prefix = CachePath(path.isAbsolute ? "/" : ".")
            for component in FilePath(path.string).components {
                prefix = prefix.appending(component.string)
                do { try io.makeDirectory(prefix) } catch {
                    throw BlobCacheError.directoryUnusable(path: path.string, reason: "cannot create it: \(error)")
                }
            }
        } else {
            throw BlobCacheError.directoryUnusable(path: path.string, reason: "it does not exist")
        }
        guard path.withPlatformString({ access($0, R_OK | W_OK | X_OK) }) == 0 else {
            throw BlobCacheError.directoryUnusable(path: path.string, reason: "it is not readable and writable")
        }
    }
}
