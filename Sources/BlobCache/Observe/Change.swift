extension BlobCache {
    /// One change to a key, as `changes(forKeysWithPrefix:)` delivers it.
    ///
    ///     for await change in cache.changes(forKeysWithPrefix: "avatar/") {
    ///         if case .removed(let key, .evicted) = change { print("evicted", key) }
    ///     }
    public enum Change: Sendable, Equatable {
        /// `key` now holds the value with id `id` (a new key, or a new value for it).
        case set(key: String, id: BlobID)
        /// `key` no longer holds a value, and why.
        case removed(key: String, reason: RemovalReason)

        /// The key that changed.
        ///
        ///     print(change.key)
        public var key: String {
            switch self {
            case .set(let key, _), .removed(let key, _): key
            }
        }
    }
}
