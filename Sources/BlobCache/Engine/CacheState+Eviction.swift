/// Removing entries: one at a time, and eviction down to the limits and the namespaces' caps.
extension CacheState {
    /// Drops one entry, journaling why; its blob goes at the end of the operation if that was
    /// its last reference.
    func remove(slot: Int32, reason: RemovalReason) {
        index.withKeyBytes(at: slot) { journal.appendRemove(keyBytes: $0, reason: reason) }
        if recordsChanges { madeChanges.append(.removed(key: index.key(at: slot), reason: reason)) }
        switch reason {
        case .evicted:
            counters.evictions += 1
            if telemetry.metrics != nil { telemetry.evicted(key: index.key(at: slot)) }
        case .expired: counters.expirations += 1
        case .explicit, .damaged, .cleared: break
        }
        release(index.remove(slot: slot))
    }

    /// Evicts unpinned entries in the policy's order (`CacheIndex.evictionCandidate`) until the
    /// totals are within the limits.
    func evictToLimits() {
        while isOverLimits, case let victim = index.evictionCandidate, victim >= 0 {
            remove(slot: victim, reason: .evicted)
        }
        if !namespaceLimits.isEmpty { evictToNamespaceLimits() }
    }

    /// Evicts each capped namespace's least recently used unpinned entries until it is within
    /// its cap: one walk of the LRU list from the oldest end.
    private func evictToNamespaceLimits() {
        namespacesOverPinned = namespacesOverPinned.filter { storedBytesOverCap(of: $0.key) != nil }
        var over = Set(namespaceLimits.keys.filter(isOverLimit))
        var cursor = index.oldest
        var passedOver: (slot: Int32, prefix: [UInt8])?
        while !over.isEmpty, cursor >= 0 {
            let next = index.entry(at: cursor).newer
            if let prefix = index.withKeyBytes(at: cursor, NamespaceKey.prefix(ofRaw:)), over.contains(prefix) {
                // As `evictionCandidate`: the value a set just stored goes last, not first.
                if index.segmented && cursor == index.lastStored {
                    passedOver = (cursor, prefix)
                } else {
                    remove(slot: cursor, reason: .evicted)
                    if storedBytesOverCap(of: prefix) == nil { over.remove(prefix) }
                }
            }
            cursor = next
        }
        if let passedOver, over.contains(passedOver.prefix) {
            remove(slot: passedOver.slot, reason: .evicted)
            if storedBytesOverCap(of: passedOver.prefix) == nil { over.remove(passedOver.prefix) }
        }
        for prefix in over { namespacesOverPinned[prefix] = storedBytesOverCap(of: prefix) }
    }

    /// The bytes the namespace with `prefix` holds when they exceed the cap this open set for it.
    private func storedBytesOverCap(of prefix: [UInt8]) -> Int? {
        guard let max = namespaceLimits[prefix], let stored = index.namespaces.usage[prefix]?.storedBytes, stored > max else {
            return nil
        }
        return stored
    }

    /// Whether the namespace with `prefix` holds more than its cap and eviction may help.
    private func isOverLimit(_ prefix: [UInt8]) -> Bool {
        guard let stored = storedBytesOverCap(of: prefix) else { return false }
        return namespacesOverPinned[prefix] != stored
    }

    var isOverLimits: Bool {
        if let max = limits.maxStoredBytes, index.storedBytes > max { return true }
        if let max = limits.maxEntries, index.entryCount > max { return true }
        return false
    }

    /// Whether a namespace holds more than the cap this open set for it.
    /// (The empty check first: it keeps the hot path free of the closure the search makes.)
    var isOverNamespaceLimits: Bool {
        !namespaceLimits.isEmpty && namespaceLimits.keys.contains(where: isOverLimit)
    }
}
