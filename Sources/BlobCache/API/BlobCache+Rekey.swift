extension BlobCache {
    /// Encrypts everything again under `newEncryption` (or, for a plain cache, encrypts it):
    /// every value and record is sealed under the new key, every blob gets its new keyed id,
    /// then the old blobs are deleted by a full `compact()`. Safe to kill at any point: the
    /// cache then opens with the old key (the kill came before the new journal took the old
    /// one's place) or with the new key (after it), never with neither, and nothing is lost
    /// (docs/RELIABILITY.md, "Rekeying"). Needs the cache to itself: with another open
    /// anywhere it fails with `inUse`. This `BlobCache` is closed when it returns (or throws
    /// after the new key took over); open the directory again with the new key. Ids change:
    /// an id `store(_:)` or `set` returned before does not name the value afterwards.
    ///
    /// Once the new journal is in place it does not throw: if deleting the old blobs fails,
    /// `rekeyCleanupFailure` says why, and a later `compact()` finishes it.
    ///
    ///     try cache.compact(rekeyingTo: .aesGCM(key: newKey))
    ///     let cache = try BlobCache(directory: path, configuration: withNewKey)
    @discardableResult
    public func compact(rekeyingTo newEncryption: Encryption) throws -> CompactionReport {
        let newCipher = try CacheCipher(newEncryption)
        var configuration = openConfiguration
        configuration.encryption = newEncryption
        try configuration.validate()   // what the reopen will need, before anything changes
        // The rekey and the end of this open under one hold of the lock: no operation of
        // another thread can slip in between and write with the old key into the new journal.
        let rekeyed = try maintenanceGate.withLock { _ in
            try state.withLock { engine -> (blobs: Int, droppedEntries: Int) in
                guard let open = engine else { throw BlobCacheError.closed }
                if let failure = open.journal.failure { throw failure }
                let result = try open.exclusively {
                    guard directoryLock.isAlone else { throw BlobCacheError.inUse(path: directory, pid: nil) }
                    return try open.perform { try open.rekey(to: newCipher) }
                }
                engine = nil
                finalStatistics.withLock { $0 = open.statistics }
                // Nothing more is written through `open`: its index and pipeline speak the old
                // key (a clean close's snapshot would describe the old blobs under the new salt).
                try? open.exclusively { directoryLock.markClosed(cleanly: true) }
                directoryLock.close()
                return result
            }
        }
        changeHub.finishAll()
        var report = CompactionReport()
        do {
            let reopened = try BlobCache(directory: directory, configuration: configuration)
            report = try reopened.compact()
            try reopened.close()
        } catch {
            report.rekeyCleanupFailure = "\(error)"
            telemetry.logger.warning("rekeyed; deleting the old blobs failed (run compact)",
                                     metadata: ["directory": "\(directory)", "error": "\(error)"])
        }
        report.blobsRekeyed = rekeyed.blobs
        report.entriesDroppedAsDamaged = rekeyed.droppedEntries
        return report
    }
}
