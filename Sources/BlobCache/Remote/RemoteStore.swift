#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A server that holds blobs and key records for many caches: the second tier behind the local
/// directory (`Configuration.remote`). The `BlobCacheRemote` module has two: `HTTPRemoteStore`
/// (nginx with WebDAV PUT, or any server that takes PUT) and `RedisRemoteStore`.
///
/// The cache calls a store from its own threads, never from Swift concurrency's cooperative
/// pool, and never while holding its locks: a call may block, but must give up after the
/// store's own timeout by throwing. Any error makes the cache skip the remote for
/// `Configuration.remoteBackoff`; a store need not retry.
///
/// The bytes a store holds are checked by the cache, not trusted: a blob travels in BlobCache's
/// self-checking loose-blob format and is verified against its id before use.
///
///     var configuration = BlobCache.Configuration()
///     configuration.remote = HTTPRemoteStore(baseURL: URL(string: "http://cache.internal/blobs")!)
public protocol RemoteStore: Sendable, CustomStringConvertible {
    /// The object's bytes, or `nil` when the server does not have it.
    func get(_ object: RemoteObject) throws -> [UInt8]?
    /// Whether the server has the object.
    func exists(_ object: RemoteObject) throws -> Bool
    /// Stores the object's bytes; `expiresAt` is when the server may forget it (`nil`: never).
    func put(_ object: RemoteObject, bytes: [UInt8], expiresAt: Date?) throws
    /// Forgets the object (no error when it was not there).
    func delete(_ object: RemoteObject) throws
}

/// What a remote store holds: a blob, named by its id, or a key record, named by the MD5 of
/// the key. Both names are 32 lowercase hex digits (`hex`).
///
///     let path = object.kind == .blob ? "\(object.hex)" : "keys/\(object.hex)"
public struct RemoteObject: Hashable, Sendable, CustomStringConvertible {
    /// Blobs and key records live under separate names (prefixes, for most stores).
    public enum Kind: String, Hashable, Sendable {
        /// A value in the loose-blob format (docs/FORMAT.md), named by its id.
        case blob
        /// A key record (docs/FORMAT.md): which blob a key holds, and until when.
        case key
    }

    /// Which of the two it is.
    public let kind: Kind
    /// The name: 32 lowercase hex digits.
    public let hex: String

    /// The blob with id `id`.
    ///
    ///     let object = RemoteObject.blob(id)
    public static func blob(_ id: BlobID) -> RemoteObject { RemoteObject(kind: .blob, hex: id.hex) }

    /// The record of `key` (a raw key: a namespace's keys carry its prefix), named by the MD5
    /// of its UTF-8 bytes.
    ///
    ///     let object = RemoteObject.key("avatar/42")
    public static func key(_ key: String) -> RemoteObject {
        RemoteObject(kind: .key, hex: BlobID(hashing: Array(key.utf8)).hex)
    }

    /// `blob/<hex>` or `key/<hex>`.
    public var description: String { "\(kind.rawValue)/\(hex)" }
}
