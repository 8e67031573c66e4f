extension BlobCache {
    /// What `compact()` reclaimed.
    ///
    ///     let report = try cache.compact()
    ///     print(report.journalBytesBefore - report.journalBytesAfter)
    public struct CompactionReport: Sendable, Equatable, Codable {
        /// Journal bytes before the rewrite.
        public var journalBytesBefore = 0
        /// Journal bytes after the rewrite.
        public var journalBytesAfter = 0
        /// Journal records before the rewrite.
        public var journalRecordsBefore = 0
        /// Journal records after the rewrite (one per live entry).
        public var journalRecordsAfter = 0
        /// Expired entries removed.
        public var expiredEntries = 0
        /// Loose blob files no entry referred to, deleted.
        public var danglingBlobsDeleted = 0
        /// Writers' temporary files left by crashes, deleted.
        public var temporaryFilesDeleted = 0
        /// Empty shard directories removed.
        public var emptyDirectoriesRemoved = 0
        /// Pack segments rewritten to drop dead records.
        public var packSegmentsCollected = 0
        /// Bytes of files deleted or given back (dangling blobs, temp files, pack space).
        public var blobBytesReclaimed = 0
        /// Blobs re-encoded with the requested codec.
        public var blobsRecompressed = 0
        /// Blobs sealed again under a new key (`compact(rekeyingTo:)`).
        public var blobsRekeyed = 0
        /// Entries a rekey did not carry over because their blob was damaged.
        public var entriesDroppedAsDamaged = 0
        /// Set when a rekey took effect but deleting the old blobs afterwards failed (they are
        /// dangling; `compact()` deletes them): what went wrong.
        public var rekeyCleanupFailure: String?
        /// Files deleted in all.
        public var filesDeleted: Int { danglingBlobsDeleted + temporaryFilesDeleted }
    }
}

extension CacheState {
    /// Full compaction: expiry sweep, dangling files and temporaries, all dead pack space,
    /// optional re-encoding, and a journal rewrite. Safe to kill at any point: every deletion
    /// waits for the records (fsynced) that make it safe. Run inside `perform`.
    func compact(recompressingTo codec: Codec?) throws -> BlobCache.CompactionReport {
        var report = BlobCache.CompactionReport()
        try store.rescan()   // segments other processes started or collected
        report.journalBytesBefore = Int(journal.size)
        report.journalRecordsBefore = journal.recordCount
        report.expiredEntries = removeExpired()
        evictToLimits()
        try commitRecords()
        if let codec { report.blobsRecompressed = try recompress(to: codec) }

        let scan = try DirectoryScan(files: files, io: io)
        for (id, path) in scan.looseBlobs where index.blob(id)?.info.place != .loose {
            report.blobBytesReclaimed.addSaturating(Int(io.status(path)?.st_size ?? 0))
            if try io.remove(path) { report.danglingBlobsDeleted += 1 }
        }
        // Staged files of a live process (this one included) may belong to sets in flight.
        for path in scan.temporaryFiles where path.lastComponent.map(CacheFiles.stagingOwnerIsGone) ?? false {
            report.blobBytesReclaimed.addSaturating(Int(io.status(path)?.st_size ?? 0))
            if try io.remove(path) { report.temporaryFilesDeleted += 1 }
        }
        // Leaves first; a shard whose last leaf went is empty on the second pass.
        for _ in 0..<2 {
            for path in try DirectoryScan(files: files, io: io).emptyShardDirectories where io.removeDirectory(path) {
                report.emptyDirectoriesRemoved += 1
            }
        }

        // Reclaim every dead pack byte: close the newest segment if it holds any, then collect
        // every closed segment with dead records.
        let deadBefore = deadPackBytes
        if let newest = store.activeSegmentNumber,
           Int(store.segmentSizes[newest] ?? 0) - PackFormat.segmentHeaderSize > index.liveBytes(inSegment: newest) {
            try store.startSegment()
        }
        report.packSegmentsCollected = try collectPackGarbage(minimumDeadFraction: 1e-9).segments
        report.blobBytesReclaimed += max(0, deadBefore - deadPackBytes)

        try compactJournal()
        report.journalBytesAfter = Int(journal.size)
        report.journalRecordsAfter = journal.recordCount
        return report
    }

    /// Deletes the staged files that processes now gone left in `packs/`, `objects/` and the
    /// shard directories (a writer that crashed between staging and publishing), by name
    /// alone: no file is read or stat'ed. Open runs it when the last open did not close
    /// cleanly or the journal shows a crash; compact and fsck --repair always sweep.
    func sweepStaleTemporaries() throws {
        for directory in [files.packs, files.objects] {
            for name in try io.listDirectory(directory) where CacheFiles.isStagingName(name) && CacheFiles.stagingOwnerIsGone(name) {
                _ = try? io.remove(directory.appending(name))
            }
        }
        for shard in try io.listDirectory(files.objects) where CacheFiles.isShardName(shard) {
            let shardPath = files.objects.appending(shard)
            for leaf in (try? io.listDirectory(shardPath)) ?? [] where CacheFiles.isShardName(leaf) {
                let leafPath = shardPath.appending(leaf)
                for name in (try? io.listDirectory(leafPath)) ?? []
                    where CacheFiles.isStagingName(name) && CacheFiles.stagingOwnerIsGone(name) {
                    _ = try? io.remove(leafPath.appending(name))
                }
            }
        }
    }

    /// Re-encodes every blob stored with a codec other than the one `codec` gives it under this
    /// open's `compression.storingRawFrom` (`codec` below it, none from it; blobs kept raw
    /// because compressing did not pay are tried again too). Ids do not change. A loose blob that
    /// stays loose is replaced by rename, its new file fsynced first (the old one may have
    /// been durable); one that moves into a pack is deleted once the record and the journal
    /// are fsynced.
    private func recompress(to codec: Codec) throws -> Int {
        var count = 0
        // This open's thresholds too: a value the policy keeps raw (too little saved) stays raw.
        var policy = pipeline.compression
        policy.codec = codec
        let durableStaging = BlobPipeline(files: files, io: io, compression: policy, packThreshold: pipeline.packThreshold,
                                          durability: .powerLossSafe, cipher: pipeline.cipher)
        for (id, blob) in index.storedBlobs where blob.info.codec != policy.codec(forValueOf: blob.info.rawLength).tag {
            var moved: BlobInfo
            var staged: StagedLooseBlob?
            if pipeline.isPieced(blob.info) {
                // A pieced blob is written again in pieces (bounded memory), and stays pieced.
                guard case .success(let (info, file)) = try pipeline.repiece(blob.info, at: try store.location(of: blob.info),
                                                                             into: durableStaging) else { continue }
                guard info.id == id, info.codec != blob.info.codec || info.payloadLength != blob.info.payloadLength else {
                    durableStaging.discard(file)
                    continue
                }
                (moved, staged) = (info, file)
            } else {
                guard case .success(let value) = try pipeline.read(blob.info, at: try store.location(of: blob.info)) else { continue }
                let prepared = value.withUnsafeBytes { durableStaging.prepare($0, id: id) }
                guard prepared.codec != blob.info.codec else { continue }
                moved = prepared.info
                if prepared.packed {
                    moved.place = try store.append(prepared)
                    if case .loose = blob.info.place { dispose(.looseBlob(id), destroysDurableData: true) }
                } else {
                    staged = try durableStaging.stage(prepared)
                }
            }
            if let staged {
                do {
                    try store.publish(staged)
                    if !store.synchronous {
                        try io.syncDirectory(staged.final.removingLastComponent())
                        // Staged in another directory (a pieced blob): the rename is durable once both are.
                        if staged.isStagedOutsideItsShard { try io.syncDirectory(staged.temporary.removingLastComponent()) }
                    }
                } catch {
                    durableStaging.discard(staged)
                    throw error
                }
            }
            index.relocate(moved)
            journal.append(.relocate(moved))
            // Each blob's record goes down before the next blob is touched: a loose file was
            // just replaced by rename, and the journal must not describe the old one for long.
            try commitRecords()
            // Relocations are not fsynced by the journal on their own (the old copy usually
            // stays until they are); a file replaced by rename does not stay.
            if store.synchronous, staged != nil { try journal.sync() }
            count += 1
        }
        return count
    }
}
