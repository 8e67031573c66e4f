#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Turns values into bytes for `CodableCache`: `JSONEncoder` and `PropertyListEncoder` are
/// ones already; conform any other encoder with `encode(_:)`.
///
///     extension MyCBOREncoder: CacheValueEncoder {}
public protocol CacheValueEncoder: Sendable {
    /// The bytes of `value`.
    func encode<Value: Encodable>(_ value: Value) throws -> Data
}

/// Turns bytes back into values for `CodableCache`: `JSONDecoder` and `PropertyListDecoder`
/// are ones already.
///
///     extension MyCBORDecoder: CacheValueDecoder {}
public protocol CacheValueDecoder: Sendable {
    /// The value of type `type` in `data`.
    func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value
}

extension JSONEncoder: CacheValueEncoder {}
extension JSONDecoder: CacheValueDecoder {}
extension PropertyListEncoder: CacheValueEncoder {}
extension PropertyListDecoder: CacheValueDecoder {}

/// A typed view of a `BlobCache` (or of one of its namespaces) that stores `Codable` values
/// through any encoder and decoder: JSON with sorted keys by default (so equal values share one
/// blob), property lists, or your own.
///
///     struct Profile: Codable { var name: String }
///     let profiles = CodableCache<Profile>(cache)
///     try profiles.set(Profile(name: "Ada"), forKey: "user/1", expiry: .after(.seconds(600)))
///     let ada = try profiles.value(forKey: "user/1")
///     let plists = CodableCache<Profile>(cache, encoder: PropertyListEncoder(), decoder: PropertyListDecoder())
public struct CodableCache<Value: Codable>: Sendable {
    /// The cache underneath.
    public let cache: BlobCache
    /// The namespace whose keys it uses, if any.
    public let namespace: BlobCache.Namespace?
    private let encoder: any CacheValueEncoder
    private let decoder: any CacheValueDecoder

    /// Wraps `cache`'s own keys, with JSON (keys sorted) unless given another encoder and decoder.
    ///
    ///     let typed = CodableCache<[String]>(cache)
    public init(_ cache: BlobCache, encoder: any CacheValueEncoder = Self.sortedJSONEncoder(),
                decoder: any CacheValueDecoder = JSONDecoder()) {
        self.cache = cache
        self.namespace = nil
        self.encoder = encoder
        self.decoder = decoder
    }

    /// Wraps the keys of `namespace`.
    ///
    ///     let sessions = CodableCache<Session>(cache.namespace("sessions"))
    public init(_ namespace: BlobCache.Namespace, encoder: any CacheValueEncoder = Self.sortedJSONEncoder(),
                decoder: any CacheValueDecoder = JSONDecoder()) {
        self.cache = namespace.cache
        self.namespace = namespace
        self.encoder = encoder
        self.decoder = decoder
    }

    /// A `JSONEncoder` with sorted keys: the default, so that equal values encode equally.
    ///
    ///     let encoder = CodableCache<Profile>.sortedJSONEncoder()
    public static func sortedJSONEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    /// Encodes `value` and stores it under `key`, with `expiry` (else the cache's default).
    ///
    ///     try profiles.set(profile, forKey: "user/1", expiry: .after(.seconds(600)))
    public func set(_ value: Value, forKey key: String, expiry: Expiry? = nil, pinned: Bool = false) throws {
        let bytes = Array(try encoder.encode(value))
        if let namespace {
            try namespace.set(bytes, forKey: key, expiry: expiry, pinned: pinned)
        } else {
            try cache.set(bytes, forKey: key, expiry: expiry, pinned: pinned)
        }
    }

    /// Decodes the value under `key`; `nil` when there is none. A value that does not decode
    /// as `Value` throws the decoder's error.
    ///
    ///     let profile = try profiles.value(forKey: "user/1")
    public func value(forKey key: String) throws -> Value? {
        // Not `namespace?.bytes(…) ?? cache.bytes(…)`: a namespace's miss would read the cache's key.
        let bytes: [UInt8]?
        if let namespace {
            bytes = try namespace.bytes(forKey: key)
        } else {
            bytes = try cache.bytes(forKey: key)
        }
        guard let bytes else { return nil }
        return try decoder.decode(Value.self, from: Data(bytes))
    }

    /// The value under `key`, loaded once for all concurrent callers when missing, encoded
    /// and stored; see
    /// `BlobCache.value(forKey:expiry:loadingWith:)`.
    ///
    ///     let profile = try await profiles.value(forKey: "user/1") { try await api.profile(1) }
    public func value(forKey key: String, expiry: Expiry? = nil,
                      loadingWith load: @escaping @Sendable () async throws -> Value) async throws -> Value where Value: SendableMetatype {
        let encoder = self.encoder
        let loadBytes: @Sendable () async throws -> [UInt8] = { Array(try encoder.encode(try await load())) }
        let bytes: [UInt8]
        if let namespace {
            bytes = try await namespace.value(forKey: key, expiry: expiry, loadingWith: loadBytes)
        } else {
            bytes = try await cache.value(forKey: key, expiry: expiry, loadingWith: loadBytes)
        }
        return try decoder.decode(Value.self, from: Data(bytes))
    }

    /// Removes the value under `key`.
    ///
    ///     try profiles.removeValue(forKey: "user/1")
    @discardableResult
    public func removeValue(forKey key: String) throws -> Bool {
        if let namespace { return try namespace.removeValue(forKey: key) }
        return try cache.removeValue(forKey: key)
    }
}
