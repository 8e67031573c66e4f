extension BlobCache {
    /// Empties the memory tier (`Configuration.memoryLimit`); the disk tier is untouched.
    ///
    ///     cache.purgeMemory()   // say, on a memory warning
    public func purgeMemory() {
        state.withLock { $0?.memory.removeAll() }
    }

    /// Offers a value just read from disk to the memory tier (kept only while its blob is
    /// stored): not when any blob was released since its ticket (`releases`), since the id may
    /// name another value with the same MD5 by now.
    func remember(_ value: [UInt8], id: BlobID, releases: UInt64) {
        state.withLock { engine in
            // Before the restore nothing can have been removed since the read began.
            guard let engine, engine.releases == releases, engine.memory.admits(size: value.count),
                  engine.pendingRestore != nil || engine.index.blob(id) != nil else { return }
            engine.memory.insert(value, for: id)
        }
    }

    /// The value of `key` (raw) when the memory tier can answer at once, without any file I/O
    /// and without waiting for the lock: `nil` when another thread holds it, the index must
    /// catch up with other processes first, or the value is not in memory. Counts a hit (a
    /// memory hit) and records its duration exactly like `bytes(forKey:)`.
    package func memoryValue(forRawKey key: String) -> [UInt8]? {
        guard remembersValues else { return nil }
        let start = telemetry.startTime
        let value = state.withLockIfAvailable { engine -> [UInt8]? in
            guard let engine, engine.journal.failure == nil else { return nil }
            return engine.rememberedValue(forKey: key)
        } ?? nil
        if value != nil { telemetry.finished(set: false, key: key, since: start) }
        return value
    }
}

extension CacheEngine {
    /// `beginRead(key:)` for a key whose value the memory tier holds, when that needs no file
    /// I/O and no flock: the index current, the entry unexpired, no accesses due for the journal.
    func rememberedValue(forKey key: String) -> [UInt8]? {
        guard pendingRestore == nil, !holdsLock, isCurrent, !pendingAccessesDue, !isOverLimits, !isOverNamespaceLimits,
              let slot = slot(of: key) else { return nil }
        let entry = index.entry(at: slot), time = now()
        guard entry.expiry > time, memory.contains(index.blob(at: entry.blob).id) else { return nil }
        return try? beginRead(key: key, at: slot, time: time)?.value
    }
}
