/// Why an entry left the cache, as the journal records it.
public enum RemovalReason: UInt8, Sendable, CustomStringConvertible {
    /// The caller removed it (`removeValue`, `removeAll`, or replaced by a new value).
    case explicit = 1
    /// LRU eviction to stay under a limit.
    case evicted = 2
    /// Its expiry passed.
    case expired = 3
    /// Its blob was corrupt or missing, found by a read or by fsck.
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
