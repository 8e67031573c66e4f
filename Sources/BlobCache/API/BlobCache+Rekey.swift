extension BlobCache {
    /// Encrypts everything again under `newEncryption` (or, for a plain cache, encrypts it):
    /// every value and record is sealed under the new key, every blob gets its new keyed id,
    /// then the old blobs are deleted by a full `compact()`. Safe to kill at any point: the
    /// cache then opens with the old key (the kill came before the new journal took the old
    /// one's place) or with the new key (after it), never with neither, and nothing is lost
    /// (docs/RELIABILITY.md, "Rekeying"). Needs the cache to itself: with another open
    /// anywhere it fails with `inUse`. This `BlobCache` is closed when it returns; open the
    /// directory again with the new key.
    ///
    ///     try cache.compact(rekeyingTo: .aesGCM(key: newKey))
    ///     let cache = try BlobCache(directory: path, configuration: withNewKey)
    @discardableResult
    public func compact(rekeyingTo newEncryption: Encryption) throws -> CompactionReport {
        let newCipher = try CacheCipher(newEncryption)
        let rekeyed = try maintenanceGate.withLock { _ in
            let result = try withEngine { engine in
                guard directoryLock.isAlone else { throw BlobCacheError.inUse(path: directory, pid: nil) }
                return try engine.perform { try engine.rekey(to: newCipher) }
            }
            closeAfterRekey()
            return result
        }
        changeHub.finishAll()
        var configuration = openConfiguration
        configuration.encryption = newEncryption
        let reopened = try BlobCache(directory: directory, configuration: configuration)
        var report = try reopened.compact()
        try reopened.close()
        report.blobsRekeyed = rekeyed.blobs
        report.entriesDroppedAsDamaged = rekeyed.droppedEntries
        return report
    }

    /// Lets the engine go without writing anything more: its index and pipeline speak the old
    /// key, and the journal is the new key's. (A clean close's snapshot would describe the old
    /// blobs under the new journal's salt.)
    private func closeAfterRekey() {
        state.withLock { engine in
            guard let open = engine else { return }
            engine = nil
            finalStatistics.withLock { $0 = open.statistics }
            try? open.exclusively { directoryLock.markClosed(cleanly: true) }
            directoryLock.close()
        }
    }
}
