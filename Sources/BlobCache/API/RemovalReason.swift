/// Why an entry left the cache: in a journal `remove` record, and in the
/// `BlobCache.Change.removed(key:reason:)` events that `changes(forKeysWithPrefix:)` delivers.
///
///     if case .removed(let key, .expired) = change { print(key, "expired") }
public enum RemovalReason: UInt8, Sendable, CustomStringConvertible {
    /// The caller removed that one key: `removeValue(forKey:)` (also through `CodableCache`,
    /// `AsyncBlobCache`, a namespace and `blobcache remove`) or `removeBlob(_:)`.
    case explicit = 1
    /// LRU eviction to stay under a limit (the cache's, or a namespace's).
    case evicted = 2
    /// Its expiry passed.
    case expired = 3
    /// Its blob was damaged or missing: found by a read, by `fsck --repair`, or by pack
    /// garbage collection finding its record cut short.
    case damaged = 4
    /// `removeAll()` of the cache or of its namespace. (Journaled as a `remove-all` record, or
    /// as `explicit` removes for a namespace: the journal never holds this value.)
    case cleared = 5

    /// The name `damaged` had before it was renamed.
    @available(*, deprecated, renamed: "damaged")
    public static var repair: RemovalReason { .damaged }

    /// The reason's name: `explicit`, `evicted`, `expired`, `damaged` or `cleared`.
    public var description: String {
        switch self {
        case .explicit: "explicit"
        case .evicted: "evicted"
        case .expired: "expired"
        case .damaged: "damaged"
        case .cleared: "cleared"
        }
    }

    /// The value a journal record holds for it (`cleared` is journaled as `explicit`).
    var journaled: RemovalReason { self == .cleared ? .explicit : self }
}
