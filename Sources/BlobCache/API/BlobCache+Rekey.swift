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
        let rekeyed = try engine.rekeyAndClose(to: newCipher)
        engine.changeHub.finishAll()
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
