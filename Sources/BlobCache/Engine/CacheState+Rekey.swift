extension CacheState {
    /// Seals everything under `newCipher` (docs/RELIABILITY.md, "Rekeying"): every blob is read
    /// under the current key (or none), written again as a new blob (its id is keyed, so its
    /// name changes) and made durable; then a new journal sealed under the new key, naming only
    /// the new blobs, is written beside the old one, fsynced and renamed over it. Until that
    /// rename the old key opens the cache as it was; from it on, the new key does. Nothing of
    /// the old blobs is deleted here: after the rename they are dangling, for `compact`.
    /// Entries whose blob is damaged are not carried over. The engine must not be used after
    /// this returns (its index and pipeline still speak the old key). Returns how many blobs
    /// were rewritten and how many entries were dropped.
    func rekey(to newCipher: CacheCipher) throws -> (blobs: Int, droppedEntries: Int) {
        try store.rescan()
        _ = removeExpired()
        try commitRecords()
        let sealing = BlobPipeline(files: files, io: io, compression: pipeline.compression, packThreshold: pipeline.packThreshold,
                                   durability: .powerLossSafe, cipher: newCipher)
        var renamed: [BlobID: BlobInfo] = [:]
        for (id, blob) in index.storedBlobs {
            // A pieced blob is sealed again a piece at a time (bounded memory), and stays pieced.
            if pipeline.isPieced(blob.info) {
                guard case .success(let (info, staged)) = try pipeline.repiece(blob.info, at: try store.location(of: blob.info),
                                                                              into: sealing) else { continue }
                do { try store.publish(staged) } catch {
                    sealing.discard(staged)
                    throw error
                }
                try io.syncDirectory(staged.final.removingLastComponent())
                try io.syncDirectory(staged.temporary.removingLastComponent())   // staged in another directory
                renamed[id] = info
                continue
            }
            guard case .success(let value) = try pipeline.read(blob.info, at: try store.location(of: blob.info)) else { continue }
            let prepared = value.withUnsafeBytes { sealing.prepare($0, id: sealing.hasher.id(of: $0)) }
            var info = prepared.info
            if prepared.packed {
                info.place = try store.append(prepared)
            } else {
                let staged = try sealing.stage(prepared)
                do { try store.publish(staged) } catch {
                    sealing.discard(staged)
                    throw error
                }
                try io.syncDirectory(staged.final.removingLastComponent())
            }
            renamed[id] = info
        }
        try store.syncAll()

        var dropped = 0
        let records = index.journalOrder().compactMap { slot -> JournalRecord? in
            var record = index.record(at: slot)
            guard let info = renamed[record.blob.id] else {
                dropped += 1
                return nil
            }
            // A content-addressed entry's key is its id.
            if record.key == BlobCache.contentAddressedKeyPrefix + record.blob.id.hex {
                record.key = BlobCache.contentAddressedKeyPrefix + info.id.hex
            }
            record.blob = info
            return .set(record)
        }
        try journal.flush()
        let replacement = try JournalFile.prepareReplacement(of: journal.path, records: records, created: now(), io: io,
                                                             cipher: newCipher)
        try deleteSnapshot()
        try journal.install(replacement, recordsSince: journal.size)
        if !journal.synchronous { try journal.syncInstalledReplacement(replacement) }
        return (renamed.count, dropped)
    }
}
