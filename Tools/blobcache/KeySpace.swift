import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The keys a command works on: the cache's own, or those of `--namespace NAME`.
struct KeySpace: Sendable {
    let cache: BlobCache
    let namespace: BlobCache.Namespace?

    init(_ cache: BlobCache, namespace name: String?) {
        self.cache = cache
        namespace = name.map(cache.namespace)
    }

    func set(_ value: some ContiguousBytes, forKey key: String, expiry: Expiry?, pinned: Bool) throws -> BlobID {
        if let namespace { return try namespace.set(value, forKey: key, expiry: expiry, pinned: pinned) }
        return try cache.set(value, forKey: key, expiry: expiry, pinned: pinned)
    }

    func startSet(forKey key: String, expiry: Expiry?, pinned: Bool) throws -> PendingSet {
        if let namespace { return try namespace.startSet(forKey: key, expiry: expiry, pinned: pinned) }
        return try cache.startSet(forKey: key, expiry: expiry, pinned: pinned)
    }

    func openValue(forKey key: String) throws -> ValueReader? {
        if let namespace { return try namespace.openValue(forKey: key) }
        return try cache.openValue(forKey: key)
    }

    func bytes(forKey key: String) throws -> [UInt8]? {
        // Not `namespace?.bytes(…) ?? cache.bytes(…)`: a namespace's miss would read the cache's key.
        if let namespace { return try namespace.bytes(forKey: key) }
        return try cache.bytes(forKey: key)
    }

    func removeValue(forKey key: String) throws -> Bool {
        if let namespace { return try namespace.removeValue(forKey: key) }
        return try cache.removeValue(forKey: key)
    }

    /// Entries with keys as the key space knows them; the cache's own exclude namespaced and
    /// content-addressed ones.
    func entries() throws -> [BlobCache.EntryInfo] {
        if let namespace { return try namespace.entries() }
        return try cache.entries().filter { !$0.key.hasPrefix("\u{0}") }
    }

    func removeAll(includingPinned: Bool) throws {
        if let namespace { return try namespace.removeAll(includingPinned: includingPinned) }
        try cache.removeAll(includingPinned: includingPinned)
    }

    func keys() throws -> [String] {
        if let namespace { return try namespace.keys() }
        return try cache.keys()
    }
}
