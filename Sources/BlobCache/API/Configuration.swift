import Crypto
import Logging
import CoreMetrics

extension BlobCache {
    /// How a cache behaves: limits, expiry, compression, durability, and its clock.
    ///
    ///     var configuration = BlobCache.Configuration()
    ///     configuration.maxStoredBytes = 500_000_000
    ///     configuration.compression = .fastReads
    ///     let cache = try BlobCache(directory: "/var/cache/app", configuration: configuration)
    public struct Configuration: Sendable {
        /// The hard cap on bytes on disk of live blobs (each blob once, headers included).
        /// `nil`: the directory's saved default (`BlobCache.saveDefaultLimits`), else no cap.
        public var maxStoredBytes: Int?
        /// The cap on entries. `nil`: the directory's saved default, else no cap.
        public var maxEntries: Int?
        /// Expiry of entries set without one.
        public var defaultExpiry: Expiry = .never
        /// Which entries go first when the cache is over its limits: `.segmentedLRU` (the
        /// default), which keeps values used more than once ahead of values used once, or
        /// `.lru`. A directory may be opened with either; its order carries over.
        ///
        ///     configuration.eviction = .lru
        public var eviction: EvictionPolicy = .segmentedLRU
        /// How new values are compressed: a codec, and the size from which values are stored
        /// raw (`CompressionPolicy`; presets `.adaptive`, the default, `.balanced`, `.fastReads`, `.smallest`
        /// and `.off`). Setting it replaces `codec` too: set `codec` after it to combine a
        /// preset's raw size with another codec. A remote tier compresses with `codec` alone.
        ///
        ///     configuration.compression = .fastReads
        public var compression: CompressionPolicy = .adaptive
        /// The codec for new blobs: `compression.codec` (values from `compression.storingRawFrom`
        /// bytes on are stored raw whatever it is).
        ///
        ///     configuration.codec = .zlib(level: 6)
        public var codec: Codec {
            get { compression.codec }
            set { compression.codec = newValue }
        }
        /// What a returned set survives.
        public var durability: Durability = .processCrashSafe
        /// Blobs whose stored size (header included) is below this are packed into segment
        /// files; others get a file of their own. `0` gives every blob its own file.
        public var packThreshold: Int = 64 * 1024
        /// A pack segment is closed for appends at this size (64 KiB to 16 GiB).
        public var packSegmentLimit: Int = 32 << 20
        /// Whether a cache directory this open creates (with any missing parents) is for the
        /// owner's group too: 2770, its files 0660, whatever the umask. Default: the owner's
        /// alone (0700, 0600). An existing directory keeps its mode, which decides: files are
        /// made for the group when the group may read, write and enter it
        /// (`BlobCache.shareWithGroup(_:in:)` changes an existing cache).
        public var shareWithGroup = false
        /// How long an operation (and the open) waits for `DIR/lock` while another process
        /// holds it for one of its operations (or a script holds it, `flock DIR/lock cmd`),
        /// then fails with `inUse` naming the holder. `nil` waits for ever; `.zero` fails at once.
        public var lockTimeout: Duration? = .seconds(30)
        /// Whether to wait for the lock for ever (`true`) or fail at once (`false`).
        @available(*, deprecated, renamed: "lockTimeout")
        public var waitForLock: Bool {
            get { lockTimeout != .zero }
            set { lockTimeout = newValue ? nil : .zero }
        }
        /// A read journals its access when the journaled one is older than this, so recency
        /// survives a crash to within this interval (a clean close keeps it exactly).
        public var accessJournalInterval: Duration = .seconds(60)
        /// Bytes of decoded values kept in memory, least recently used out first (by bytes);
        /// values larger than `memoryLimit / 8` are not kept; `0` turns the memory tier off.
        /// Default 16 MiB. A hit there costs no disk read and no decompression, and is never
        /// stale: the tier is keyed by content id and consulted only after the index (which
        /// follows every set, remove, expiry and eviction, other processes' included) says
        /// which id the key holds. Values enter it when read; `purgeMemory()` empties it.
        ///
        ///     configuration.memoryLimit = 64 << 20
        public var memoryLimit: Int = 16 << 20
        /// Where the cache logs (apple/swift-log): recovery at open (a torn tail cut, a damaged
        /// journal rewritten, lost blobs dropped) at `notice` and `warning`, damaged blobs found
        /// by reads at `warning`, maintenance at `debug`; nothing per operation above `debug`.
        /// The default logger discards everything; the library never bootstraps `LoggingSystem`.
        ///
        ///     configuration.logger = Logger(label: "myapp.cache")
        public var logger = Logger(label: "blobcache", factory: { _ in SwiftLogNoOpLogHandler() })
        /// Where metrics go (apple/swift-metrics): `nil` (the default) uses the factory the
        /// application bootstrapped `MetricsSystem` with before opening the cache; none
        /// bootstrapped, no metrics and no cost. Counters `blobcache.hits`, `.misses`,
        /// `.memory_hits`, `.deduped_sets`, `.evictions`, `.bytes_read`, `.bytes_written` and
        /// timers `blobcache.get.duration`, `blobcache.set.duration`, each with the dimension
        /// `namespace` (`""` outside namespaces). The library never bootstraps `MetricsSystem`.
        ///
        ///     configuration.metricsFactory = myPrometheusFactory
        public var metricsFactory: (any MetricsFactory)? = nil
        /// A second tier shared with other machines (`HTTPRemoteStore`, `RedisRemoteStore` from
        /// the `BlobCacheRemote` module), or `nil` (the default) for none. A local miss asks it;
        /// a value it has is checked against its id, written back locally (within the local
        /// caps) and returned. Sets and removes reach it after the local operation, through a
        /// bounded write-behind queue (`flushRemote()` waits for it; `close()` does too). A
        /// remote that fails is logged, counted (`statistics().remote`) and skipped for
        /// `remoteBackoff`: it never fails a local operation. Clearing, eviction and expiry stay
        /// local: the remote's contents are the server's to expire and evict.
        ///
        ///     configuration.remote = RedisRemoteStore(host: "cache.internal", prefix: "ci")
        public var remote: (any RemoteStore)? = nil
        /// How long the remote is skipped after a call to it failed or timed out. Default 30 s.
        ///
        ///     configuration.remoteBackoff = .seconds(5)
        public var remoteBackoff: Duration = .seconds(30)
        /// Bytes of values the write-behind queue holds at most; a set that would overflow it
        /// is stored locally and not sent (counted in `statistics().remote.droppedWrites`).
        /// Default 64 MiB.
        ///
        ///     configuration.remoteQueueLimit = 256 << 20
        public var remoteQueueLimit: Int = 64 << 20
        /// The key that authenticates the key records this cache shares through `remote`
        /// (`nil`, the default: none). With it, every record the cache writes carries an
        /// HMAC-SHA256 tag over the key, the blob id, the expiry and the value's SHA-256, and a
        /// record without a valid tag (a forgery, or one written without the key) is refused:
        /// counted in `statistics().remote.rejected`, never returned, never written back.
        /// Content-addressed reads (`bytes(for:)`) then never ask the remote, since no record
        /// vouches for them. Every cache sharing a remote needs the same key; 32 random bytes.
        /// Without it, anyone who can write the server can choose which value a key reads
        /// (docs/SECURITY.md).
        ///
        ///     configuration.remoteAuthenticationKey = SymmetricKey(data: try Data(contentsOf: keyURL))
        public var remoteAuthenticationKey: SymmetricKey? = nil
        /// Encryption at rest (`nil`, the default: none). With `.aesGCM(key:)`, values, keys and
        /// metadata are sealed and blob ids keyed (docs/SECURITY.md). A cache is encrypted or
        /// not from its creation: opening an encrypted one without its key, with another key,
        /// or a plain one with a key fails (`encryptionKeyRequired`, `wrongEncryptionKey`,
        /// `cacheNotEncrypted`) and changes nothing. Not combined with `remote` in this release.
        ///
        ///     configuration.encryption = .aesGCM(key: SymmetricKey(data: keyBytes))
        public var encryption: Encryption? = nil
        /// The clock for creation, access and expiry times.
        public var clock: any CacheClock = SystemClock()
        /// Journal growth past the index snapshot after which a clean close rewrites it
        /// (internal: tests lower it to exercise snapshots on small caches).
        var snapshotThreshold: Int64 = 64 * 1024
        /// The least journal growth past the snapshot after which maintenance writes a new one
        /// while the cache is in use (internal: tests lower it; see `CacheState.checkpointThreshold`).
        var checkpointMinimum: Int64 = 16 << 20
        /// The file system every call goes through (internal: tests inject faults with it).
        var fileSystem: any FileSystem = PosixFileSystem()

        /// The default configuration: LZ4 where it saves enough (`.adaptive`), segmented LRU
        /// eviction, no limits beyond the directory's saved ones, no expiry.
        ///
        ///     let configuration = BlobCache.Configuration()
        public init() {}

        func validate() throws {
            if let max = maxStoredBytes, max <= 0 {
                throw BlobCacheError.invalidConfiguration(reason: "maxStoredBytes must be positive, got \(max)")
            }
            if let max = maxEntries, max <= 0 {
                throw BlobCacheError.invalidConfiguration(reason: "maxEntries must be positive, got \(max)")
            }
            guard packThreshold >= 0 else {
                throw BlobCacheError.invalidConfiguration(reason: "packThreshold must not be negative")
            }
            guard packSegmentLimit >= 1 << 16, packSegmentLimit <= PackFormat.maxSegmentLimit else {
                throw BlobCacheError.invalidConfiguration(reason: "packSegmentLimit must be 64 KiB to 16 GiB")
            }
            guard memoryLimit >= 0 else {
                throw BlobCacheError.invalidConfiguration(reason: "memoryLimit must not be negative, got \(memoryLimit)")
            }
            guard remoteBackoff >= .zero, remoteQueueLimit >= 0 else {
                throw BlobCacheError.invalidConfiguration(reason: "remoteBackoff and remoteQueueLimit must not be negative")
            }
            if let key = remoteAuthenticationKey, key.bitCount < 256 {
                throw BlobCacheError.invalidConfiguration(
                    reason: "remoteAuthenticationKey must be at least 32 bytes, got \(key.bitCount / 8)")
            }
            if let lockTimeout, lockTimeout < .zero {
                throw BlobCacheError.invalidConfiguration(reason: "lockTimeout must not be negative")
            }
            if encryption != nil && remote != nil {
                throw BlobCacheError.invalidConfiguration(reason: "encryption and a remote tier cannot be combined yet (a remote would receive values in plain text)")
            }
            if case .zlib(let level) = codec, !(1...9).contains(level) {
                throw BlobCacheError.invalidConfiguration(reason: "zlib level must be 1...9, got \(level)")
            }
            if let size = compression.storingRawFrom, size < 0 {
                throw BlobCacheError.invalidConfiguration(reason: "compression.storingRawFrom must not be negative, got \(size)")
            }
        }
    }

    /// The limits a cache enforces after merging the configuration with the directory's defaults.
    public struct Limits: Sendable, Hashable, Codable {
        /// Bytes on disk of live blobs; `nil` for no cap.
        public var maxStoredBytes: Int?
        /// Entries; `nil` for no cap.
        public var maxEntries: Int?

        /// Makes limits.
        ///
        ///     let limits = BlobCache.Limits(maxStoredBytes: 1 << 30, maxEntries: nil)
        public init(maxStoredBytes: Int? = nil, maxEntries: Int? = nil) {
            self.maxStoredBytes = maxStoredBytes
            self.maxEntries = maxEntries
        }
    }
}
