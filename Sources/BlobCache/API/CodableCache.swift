#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A typed view of a `BlobCache` that stores `Codable` values as JSON.
///
///     struct Profile: Codable { var name: String }
///     let profiles = CodableCache<Profile>(cache)
///     try profiles.set(Profile(name: "Ada"), forKey: "user/1")
///     let ada = try profiles.value(forKey: "user/1")
public struct CodableCache<Value: Codable>: Sendable {
    /// The cache underneath.
    public let cache: BlobCache

    /// Wraps `cache`.
    ///
    ///     let typed = CodableCache<[String]>(cache)
    public init(_ cache: BlobCache) { self.cache = cache }

    /// Encodes `value` as JSON (keys sorted, so equal values share one blob) and stores it.
    ///
    ///     try profiles.set(profile, forKey: "user/1", expiry: .after(.seconds(600)))
    public func set(_ value: Value, forKey key: String, expiry: Expiry? = nil, pinned: Bool = false) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = Array(try encoder.encode(value))
        try cache.set(bytes, forKey: key, expiry: expiry, pinned: pinned)
    }

    /// Decodes the value under `key`; `nil` when there is none. A value that does not decode
    /// as `Value` throws the decoder's error.
    ///
    ///     let profile = try profiles.value(forKey: "user/1")
    public func value(forKey key: String) throws -> Value? {
        guard let bytes = try cache.bytes(forKey: key) else { return nil }
        return try JSONDecoder().decode(Value.self, from: Data(bytes))
    }

    /// Removes the value under `key`.
    ///
    ///     try profiles.removeValue(forKey: "user/1")
    @discardableResult
    public func removeValue(forKey key: String) throws -> Bool { try cache.removeValue(forKey: key) }
}
