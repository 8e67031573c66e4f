/// Why an entry left the cache, as a journal `remove` record says it. Replacing a key's value
/// (a `set` record) and `removeAll` (a `remove-all` record) carry no reason.
public enum RemovalReason: UInt8, Sendable, CustomStringConvertible {
    /// The caller removed that one key: `removeValue(forKey:)` (also through `CodableCache`,
    /// `AsyncBlobCache` and `blobcache remove`) or `removeBlob(_:)`.
    case explicit = 1
    /// LRU eviction to stay under a limit.
    case evicted = 2
    /// Its expiry passed.
    case expired = 3
    /// Its blob was corrupt or missing: found by a read, by `fsck --repair`, or by pack
    /// garbage collection finding its record cut short.
    case repair = 4

    public var description: String {
        switch self {
        case .explicit: "explicit"
        case .evicted: "evicted"
        case .expired: "expired"
        case .repair: "repair"
        }
    }
}
