extension BlobCache {
    /// The changes to keys starting with `prefix` (every key when empty), as they happen:
    /// sets, and removals with their reason (explicit, expired, evicted, damaged, cleared),
    /// including those of other processes sharing the directory, which this open learns when
    /// it next catches up (at its next operation). Any number of consumers may listen at once.
    ///
    /// Delivery never blocks the cache: each stream buffers up to 1,024 changes, and a consumer
    /// that falls further behind loses the oldest. The stream ends when the cache closes, or
    /// when its consumer stops iterating. Keys of namespaces and content-addressed entries are
    /// not included (a namespace has `changes(forKeysWithPrefix:)` of its own).
    ///
    ///     for await change in cache.changes(forKeysWithPrefix: "avatar/") {
    ///         switch change {
    ///         case .set(let key, let id): print("set", key, id)
    ///         case .removed(let key, let reason): print("removed", key, reason)
    ///         }
    ///     }
    public func changes(forKeysWithPrefix prefix: String = "") -> AsyncStream<Change> {
        changes(namespace: nil, prefix: prefix)
    }

    /// Changes to the raw keys starting with `namespace + prefix`.
    func changes(namespace: [UInt8]?, prefix: String) -> AsyncStream<Change> {
        let stream = engine.changeHub.subscribe(namespace: namespace, prefix: prefix)
        // Closed already: the stream ends at once.
        if engine.isClosed { engine.changeHub.finishAll() }
        return stream
    }
}
