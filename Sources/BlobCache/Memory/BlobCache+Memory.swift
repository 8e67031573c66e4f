extension BlobCache {
    /// Empties the memory tier (`Configuration.memoryLimit`); the disk tier is untouched.
    ///
    ///     cache.purgeMemory()   // say, on a memory warning
    public func purgeMemory() {
        engine.purgeMemory()
    }

    /// The value of `key` (raw) when the memory tier can answer at once, without any file I/O
    /// and without waiting for the lock: `nil` when another thread holds it, the index must
    /// catch up with other processes first, or the value is not in memory. Counts a hit (a
    /// memory hit) and records its duration exactly like `bytes(forKey:)`.
    package func memoryValue(forRawKey key: String) -> [UInt8]? {
        guard engine.remembersValues else { return nil }
        let start = telemetry.startTime
        let value = engine.rememberedValue(forKey: key)
        if value != nil { telemetry.finished(set: false, key: key, since: start) }
        return value
    }
}
