import Dispatch

extension BlobCache {
    /// The cache's operations as `async` functions. Disk work runs on a Dispatch queue, so
    /// awaiting it never blocks Swift concurrency's cooperative threads.
    ///
    ///     let bytes = try await cache.async.bytes(forKey: "avatar/42")
    public var async: AsyncBlobCache { AsyncBlobCache(cache: self) }
}

/// `async` access to a `BlobCache` (see `BlobCache.async`).
public struct AsyncBlobCache: Sendable {
    /// The synchronous cache underneath.
    public let cache: BlobCache

    private static let queue = DispatchQueue(label: "BlobCache.async", qos: .utility, attributes: .concurrent)

    /// Stores `value` under `key`; see `BlobCache.set(_:forKey:expiry:pinned:)`.
    ///
    ///     try await cache.async.set(bytes, forKey: "k")
    @discardableResult
    public func set(_ value: [UInt8], forKey key: String, expiry: Expiry? = nil, pinned: Bool = false) async throws -> BlobID {
        try await run { try $0.set(value, forKey: key, expiry: expiry, pinned: pinned) }
    }

    /// The value under `key`; see `BlobCache.bytes(forKey:)`. A memory-tier hit that needs
    /// no file I/O and no waiting for the lock returns on the caller's thread, with no queue hop.
    ///
    ///     let bytes = try await cache.async.bytes(forKey: "k")
    public func bytes(forKey key: String) async throws -> [UInt8]? {
        if let remembered = cache.memoryValue(forRawKey: key) { return remembered }
        return try await run { try $0.bytes(forKey: key) }
    }

    /// The value with id `id`; see `BlobCache.bytes(for:)`.
    ///
    ///     let bytes = try await cache.async.bytes(for: id)
    public func bytes(for id: BlobID) async throws -> [UInt8]? {
        try await run { try $0.bytes(for: id) }
    }

    /// Stores `value` by content; see `BlobCache.store(_:)`.
    ///
    ///     let id = try await cache.async.store(bytes)
    @discardableResult
    public func store(_ value: [UInt8]) async throws -> BlobID {
        try await run { try $0.store(value) }
    }

    /// Removes `key`; see `BlobCache.removeValue(forKey:)`.
    ///
    ///     try await cache.async.removeValue(forKey: "k")
    @discardableResult
    public func removeValue(forKey key: String) async throws -> Bool {
        try await run { try $0.removeValue(forKey: key) }
    }

    /// Compacts; see `BlobCache.compact()`.
    ///
    ///     try await cache.async.compact()
    @discardableResult
    public func compact() async throws -> BlobCache.CompactionReport {
        try await run { try $0.compact() }
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (BlobCache) throws -> T) async throws -> T {
        let cache = self.cache
        return try await Self.run { try body(cache) }
    }

    /// Runs `body` on BlobCache's I/O queue (never on Swift's cooperative threads) and awaits it.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
