import SystemPackage
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension BlobCache {
    /// The namespace `name` of this cache: a key space of its own whose values share the
    /// cache's blobs (a value stored in two namespaces is stored once), within the cache's
    /// limits and, optionally, a byte cap of its own.
    ///
    ///     let thumbnails = cache.namespace("thumbnails")
    ///     try thumbnails.set(bytes, forKey: "photo/1")
    ///
    /// `name` must be non-empty, at most 255 bytes of UTF-8, without U+0000; an invalid name
    /// makes every call on the namespace throw `invalidKey`.
    public func namespace(_ name: String) -> Namespace { Namespace(cache: self, name: name) }

    /// A key space of a `BlobCache` (see `BlobCache.namespace(_:)`): keys are isolated per
    /// namespace, blobs shared across them. Each call is the cache's own, on `name`'s keys.
    ///
    ///     let sessions = cache.namespace("sessions")
    ///     try sessions.setLimits(maxStoredBytes: 10_000_000)
    ///     let token = try sessions.bytes(forKey: "user/42")
    public struct Namespace: Sendable {
        /// The cache it belongs to.
        public let cache: BlobCache
        /// Its name.
        public let name: String
        /// Every raw key of it starts with these bytes (`NamespaceKey`).
        let prefix: [UInt8]
        /// The same, as a `String` to put before keys (concatenation keeps the bytes as they are).
        private let keyPrefix: String

        init(cache: BlobCache, name: String) {
            self.cache = cache
            self.name = name
            prefix = NamespaceKey.prefix(of: name)
            keyPrefix = String(decoding: prefix, as: UTF8.self)
        }

        /// What a namespace holds.
        public struct Totals: Sendable, Equatable, Codable {
            /// Its entries.
            public var entries: Int
            /// Distinct blobs its entries use.
            public var blobs: Int
            /// Bytes of its distinct values.
            public var logicalBytes: Int
            /// Bytes its distinct blobs take on disk, headers included: what its cap counts
            /// (a blob shared with other namespaces counts in each).
            public var storedBytes: Int
            /// Its byte cap in this open, if any.
            public var maxStoredBytes: Int?

            func adding(_ other: Totals) -> Totals {
                var sum = self
                sum.entries += other.entries
                sum.blobs += other.blobs
                sum.logicalBytes += other.logicalBytes
                sum.storedBytes += other.storedBytes
                return sum
            }

            init(_ usage: NamespaceLedger.Usage, maxStoredBytes: Int?) {
                entries = usage.entries
                blobs = usage.references.count
                logicalBytes = usage.logicalBytes
                storedBytes = usage.storedBytes
                self.maxStoredBytes = maxStoredBytes
            }
        }

        /// Stores `value` under `key` in this namespace; see `BlobCache.set(_:forKey:expiry:pinned:)`.
        ///
        ///     try thumbnails.set(bytes, forKey: "photo/1", expiry: .after(.seconds(600)))
        @discardableResult
        public func set(_ value: some ContiguousBytes, forKey key: String, expiry: Expiry? = nil, pinned: Bool = false) throws -> BlobID {
            try cache.set(value, forRawKey: rawKey(key), expiry: expiry, pinned: pinned)
        }

        /// The value under `key` in this namespace, or `nil`; see `BlobCache.bytes(forKey:)`.
        ///
        ///     let bytes = try thumbnails.bytes(forKey: "photo/1")
        public func bytes(forKey key: String) throws -> [UInt8]? {
            try cache.bytes(forRawKey: rawKey(key))
        }

        /// Starts a set of `key` in this namespace whose value arrives in parts; see
        /// `BlobCache.startSet(forKey:expiry:pinned:)`.
        ///
        ///     let upload = try thumbnails.startSet(forKey: "video/1")
        public func startSet(forKey key: String, expiry: Expiry? = nil, pinned: Bool = false) throws -> PendingSet {
            try cache.startSet(forRawKey: rawKey(key), expiry: expiry, pinned: pinned)
        }

        /// Stores everything `source` gives under `key` in this namespace; see
        /// `BlobCache.set(contentsOf:forKey:expiry:pinned:)`.
        ///
        ///     try thumbnails.set(contentsOf: fd, forKey: "video/1")
        @discardableResult
        public func set(contentsOf source: FileDescriptor, forKey key: String, expiry: Expiry? = nil,
                        pinned: Bool = false) throws -> BlobID {
            try cache.set(contentsOf: source, forRawKey: rawKey(key), expiry: expiry, pinned: pinned)
        }

        /// Opens the value under `key` in this namespace for reading in checked chunks; see
        /// `BlobCache.openValue(forKey:)`.
        ///
        ///     let reader = try thumbnails.openValue(forKey: "video/1")
        public func openValue(forKey key: String) throws -> ValueReader? {
            try cache.openValue(forRawKey: rawKey(key))
        }

        /// Whether `key` holds an unexpired value in this namespace (not counted as an access).
        ///
        ///     if try thumbnails.contains("photo/1") { … }
        public func contains(_ key: String) throws -> Bool {
            try cache.contains(rawKey: rawKey(key))
        }

        /// Removes `key` from this namespace; returns whether it held a value.
        ///
        ///     try thumbnails.removeValue(forKey: "photo/1")
        @discardableResult
        public func removeValue(forKey key: String) throws -> Bool {
            try cache.removeValue(forRawKey: rawKey(key))
        }

        /// Removes every entry of this namespace (pinned ones only when `includingPinned`);
        /// other namespaces and the cache's own keys keep theirs. Observers see `.cleared`.
        ///
        ///     try thumbnails.removeAll()
        public func removeAll(includingPinned: Bool = false) throws {
            try validateName()
            try cache.engine.write { $0.removeNamespace(prefix, includingPinned: includingPinned) }
        }

        /// This namespace's keys, least recently used first (pinned keys first of all).
        ///
        ///     for key in try thumbnails.keys() { print(key) }
        public func keys() throws -> [String] {
            try entries().map(\.key)
        }

        /// The metadata of this namespace's entries (keys as this namespace knows them), least
        /// recently used first (pinned entries first of all).
        ///
        ///     for entry in try thumbnails.entries() { print(entry.key, entry.size) }
        public func entries() throws -> [EntryInfo] {
            try validateName()
            let prefixBytes = prefix.count
            return try cache.engine.read { .answer($0.entries { NamespaceKey.prefix(ofRaw: $0) == prefix }) }.map { entry in
                var info = entry
                info.key = String(decoding: entry.key.utf8.dropFirst(prefixBytes), as: UTF8.self)
                return info
            }
        }

        /// Entries, distinct blobs and bytes of this namespace, and its cap.
        ///
        ///     print(try thumbnails.totals().storedBytes)
        public func totals() throws -> Totals {
            try validateName()
            let (usage, cap) = try cache.engine.read { .answer($0.namespaceUsage(prefix)) }
            return Totals(usage ?? NamespaceLedger.Usage(), maxStoredBytes: cap)
        }

        /// Caps the bytes this namespace's blobs take (`nil`: no cap of its own), within the
        /// cache's limits, for this open of the cache; its least recently used entries are
        /// evicted at once, and by every later set, to stay under it. A cap below 1 is taken as
        /// 1; a failure to write the evictions surfaces at the cache's next operation.
        ///
        ///     thumbnails.setLimits(maxStoredBytes: 50_000_000)
        public func setLimits(maxStoredBytes: Int?) {
            guard (try? validateName()) != nil else { return }
            _ = try? cache.engine.write { $0.setNamespaceCap(prefix, to: maxStoredBytes.map { max(1, $0) }) }
        }

        /// The changes to this namespace's keys starting with `prefix`, with keys as this
        /// namespace knows them; see `BlobCache.changes(forKeysWithPrefix:)`.
        ///
        ///     for await change in thumbnails.changes() { print(change) }
        public func changes(forKeysWithPrefix prefix: String = "") -> AsyncStream<Change> {
            cache.changes(namespace: self.prefix, prefix: prefix)
        }

        /// The value under `key`, loaded once for all concurrent callers when missing; see
        /// `BlobCache.value(forKey:expiry:loadingWith:)`.
        ///
        ///     let thumb = try await thumbnails.value(forKey: "photo/1") { try await render() }
        public func value(forKey key: String, expiry: Expiry? = nil,
                          loadingWith load: @escaping @Sendable () async throws -> [UInt8]) async throws -> [UInt8] {
            try await cache.value(forRawKey: rawKey(key), expiry: expiry, loadingWith: load)
        }

        /// This namespace's operations as `async` functions, run on BlobCache's I/O queue.
        ///
        ///     let bytes = try await thumbnails.async.bytes(forKey: "photo/1")
        public var async: AsyncNamespace { AsyncNamespace(namespace: self) }

        /// The raw key of `key` in this namespace, after checking both.
        func rawKey(_ key: String) throws -> String {
            try validateName()
            try BlobCache.validate(key)
            return keyPrefix + key
        }

        private func validateName() throws {
            guard !name.isEmpty, name.utf8.count <= NamespaceKey.maxNameBytes, !name.utf8.contains(0) else {
                throw BlobCacheError.invalidKey(reason: "a namespace name must be 1 to \(NamespaceKey.maxNameBytes) bytes of UTF-8 without U+0000")
            }
        }
    }

    /// Every namespace that holds entries, with its figures, by name.
    ///
    ///     for (name, totals) in try cache.namespaceTotals() { print(name, totals.entries) }
    public func namespaceTotals() throws -> [String: Namespace.Totals] {
        // Names whose bytes differ but which Swift compares equal (é as one code point or
        // two, damaged UTF-8) are distinct namespaces: their figures are added up here.
        Dictionary(try engine.read { .answer($0.namespaceUsages()) }.map { prefix, usage, cap in
            (NamespaceKey.name(ofPrefix: prefix), Namespace.Totals(usage, maxStoredBytes: cap))
        }, uniquingKeysWith: { $0.adding($1) })
    }

    /// Whether a raw key holds an unexpired value.
    func contains(rawKey key: String) throws -> Bool {
        try engine.read { .answer($0.holds(key)) }
    }

    /// Removes a raw key's entry (and, through the write-behind queue, its remote record);
    /// returns whether there was one.
    func removeValue(forRawKey key: String) throws -> Bool {
        let removed = try engine.write { $0.removeValue(forKey: key) }
        // After the local remove, whether or not there was an entry: another cache may have set it.
        remote?.sendRemoval(ofKey: key)
        return removed
    }
}

/// `async` access to a namespace (see `BlobCache.Namespace.async`).
public struct AsyncNamespace: Sendable {
    /// The namespace underneath.
    public let namespace: BlobCache.Namespace

    /// Stores `value` under `key`; see `BlobCache.Namespace.set(_:forKey:expiry:pinned:)`.
    ///
    ///     try await thumbnails.async.set(bytes, forKey: "photo/1")
    @discardableResult
    public func set(_ value: [UInt8], forKey key: String, expiry: Expiry? = nil, pinned: Bool = false) async throws -> BlobID {
        let namespace = self.namespace
        return try await AsyncBlobCache.run { try namespace.set(value, forKey: key, expiry: expiry, pinned: pinned) }
    }

    /// The value under `key`; see `BlobCache.Namespace.bytes(forKey:)`.
    ///
    ///     let bytes = try await thumbnails.async.bytes(forKey: "photo/1")
    public func bytes(forKey key: String) async throws -> [UInt8]? {
        let namespace = self.namespace
        return try await AsyncBlobCache.run { try namespace.bytes(forKey: key) }
    }

    /// Removes `key`; see `BlobCache.Namespace.removeValue(forKey:)`.
    ///
    ///     try await thumbnails.async.removeValue(forKey: "photo/1")
    @discardableResult
    public func removeValue(forKey key: String) async throws -> Bool {
        let namespace = self.namespace
        return try await AsyncBlobCache.run { try namespace.removeValue(forKey: key) }
    }
}
