import SystemPackage
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

    /// The engine: every operation on the cache's state and files.
    let engine: Engine
    let defaultExpiry: Expiry
    /// The loads `value(forKey:expiry:loadingWith:)` has running, by raw key.
    let flights = FlightTable()
    /// Logger and metrics.
    let telemetry: Telemetry
    /// The second tier (`Configuration.remote`), when there is one.
    let remote: RemoteTier?
    /// The configuration's clock (for the remote tier's expiry times).
    let clock: any CacheClock
    /// The configuration the cache was opened with (a rekey reopens with it and the new key).
    let openConfiguration: Configuration

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
        try Engine.checkKey(of: configuration, against: files, io: FileIO(configuration.fileSystem))
        let telemetry = Telemetry(logger: configuration.logger, factory: configuration.metricsFactory)
        try Self.prepareDirectory(files.root, create: createDirectory,
                                  io: FileIO(configuration.fileSystem, sharedWithGroup: configuration.shareWithGroup))
        let io = FileIO(configuration.fileSystem).matchingAccess(of: files.root)
        let lock = try DirectoryLock.open(files, io: io, timeout: configuration.lockTimeout)
        do {
            engine = try Engine(directory: directory, files: files, io: io, lock: lock, configuration: configuration,
                                telemetry: telemetry)
        } catch {
            lock.close()
            throw error
        }
        openReport = engine.openReport
        self.directory = directory
        self.defaultExpiry = configuration.defaultExpiry
        self.telemetry = telemetry
        self.clock = configuration.clock
        self.openConfiguration = configuration
        self.remote = configuration.remote.map {
            RemoteTier(store: $0, backoff: configuration.remoteBackoff, queueLimit: configuration.remoteQueueLimit,
                       codec: configuration.codec, clock: configuration.clock, logger: configuration.logger,
                       authentication: configuration.remoteAuthenticationKey)
        }
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
            let id = try engine.set(raw, key: key, expiry: rule, pinned: pinned, remembering: remembering)
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
        guard let value = try engine.value(forKey: key) else { return remote == nil ? nil : try remoteValue(forRawKey: key) }
        return value
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
        try engine.read { .answer($0.entry(forKey: key)) }
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
        try engine.write { $0.removeAll(includingPinned: includingPinned) }
    }

    /// Removes every expired entry now (reads and opens also drop them); returns how many.
    ///
    ///     let swept = try cache.removeExpired()
    @discardableResult
    public func removeExpired() throws -> Int {
        try engine.write { $0.removeExpired() }
    }

    /// Evicts every entry (any namespace's, content-addressed ones too; pinned ones never) not
    /// read or written since `date`, as ccache's `--evict-older-than` and an age limit do;
    /// returns how many were evicted (counted in `statistics().evictions`).
    ///
    ///     try cache.evictEntries(unusedSince: Date().addingTimeInterval(-86_400))   // a day
    @discardableResult
    public func evictEntries(unusedSince date: Date) throws -> Int {
        try engine.write { $0.evictUnused(before: Nanoseconds.from(date)) }
    }

    /// Every key, least recently used first (pinned keys first of all). Content-addressed
    /// entries (`store(_:)`) are not listed.
    ///
    ///     for key in try cache.keys() { print(key) }
    public func keys() throws -> [String] {
        try engine.read { .answer($0.keys()) }
    }

    /// The metadata of every entry, least recently used first (pinned entries first of all).
    ///
    ///     for entry in try cache.entries() { print(entry.key, entry.size) }
    public func entries() throws -> [EntryInfo] {
        try engine.read { .answer($0.entries()) }
    }

    /// Sizes, counts, limits and counters.
    ///
    ///     print(try cache.totals().storedBytes)
    public func totals() throws -> Totals {
        try engine.read { .answer($0.totals()) }
    }

    /// Changes the limits of this open cache, evicting at once if they are smaller.
    ///
    ///     try cache.setLimits(.init(maxStoredBytes: 100_000_000))
    public func setLimits(_ limits: Limits) throws {
        try engine.write { $0.setLimits(limits) }
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
        try engine.compact(recompressingTo: codec)
    }

    /// Writes out recency, syncs the journal and releases the directory. Later calls throw
    /// `closed`; closing twice is harmless.
    ///
    ///     try cache.close()
    public func close() throws {
        // Delivers (or, with the remote down, drops) what the write-behind queue holds.
        remote?.flush()
        // Ends the change streams whatever happens (outside the lock: a stream's end calls back).
        defer { engine.changeHub.finishAll() }
        // Waits for maintenance running on another thread to finish its steps.
        try engine.close(remoteRejections: remote?.counters.rejected ?? 0)
    }

    // MARK: Content-addressed values

    /// Stores `value` by content alone and returns its id (an entry with no key, subject to
    /// the limits like any other). Storing the same bytes again changes nothing but recency.
    ///
    ///     let id = try cache.store(bytes)
    @discardableResult
    public func store(_ value: some ContiguousBytes) throws -> BlobID {
        try value.withUnsafeBytes { raw in
            let id = engine.pipeline.hasher.id(of: raw)
            try engine.set(raw, key: Self.contentAddressedKeyPrefix + id.hex, expiry: defaultExpiry, pinned: false, knownID: id)
            remote?.send(raw, id: id, key: nil, expiry: defaultExpiry.deadline(from: Nanoseconds.from(clock.now())))
            return id
        }
    }

    /// The value with id `id`, whichever key (or none) stored it; `nil` when not stored.
    ///
    ///     let bytes = try cache.bytes(for: id)
    public func bytes(for id: BlobID) throws -> [UInt8]? {
        guard let value = try engine.value(for: id) else { return remote == nil ? nil : try remoteValue(for: id) }
        return value
    }

    /// Removes the content-addressed entry for `id` (keys that share the blob keep it).
    ///
    ///     try cache.removeBlob(id)
    @discardableResult
    public func removeBlob(_ id: BlobID) throws -> Bool {
        try removeValue(forKey: Self.contentAddressedKeyPrefix + id.hex)
    }

    // MARK: Internals

    /// The raw key prefix of content-addressed entries (`store(_:)`): no user key starts with
    /// it, and their key is it followed by the id in hex.
    static let contentAddressedKeyPrefix = "\u{0}"

    static func validate(_ key: String) throws {
        guard !key.isEmpty else { throw BlobCacheError.invalidKey(reason: "a key must not be empty") }
        guard key.utf8.count <= maxKeyBytes else {
            throw BlobCacheError.invalidKey(reason: "a key must be at most \(maxKeyBytes) bytes of UTF-8, got \(key.utf8.count)")
        }
        guard !key.hasPrefix(contentAddressedKeyPrefix) else {
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
