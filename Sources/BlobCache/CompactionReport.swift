extension BlobCache {
    /// What `compact()` reclaimed.
    ///
    ///     let report = try cache.compact()
    ///     print(report.journalBytesBefore - report.journalBytesAfter)
    public struct CompactionReport: Sendable, Equatable, Codable {
        /// Journal size before and after the rewrite, in bytes and in records.
        public var journalBytesBefore = 0
        public var journalBytesAfter = 0
        public var journalRecordsBefore = 0
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
        /// Files deleted in all.
        public var filesDeleted: Int { danglingBlobsDeleted + temporaryFilesDeleted }
    }
}

extension CacheEngine {
    /// Full compaction: expiry sweep, dangling files and temporaries, all dead pack space,
    /// optional re-encoding, and a journal rewrite. Safe to kill at any point.
    func compact(recompressingTo codec: Codec?) throws -> BlobCache.CompactionReport {
        var report = BlobCache.CompactionReport()
        report.journalBytesBefore = Int(journal.size)
        report.journalRecordsBefore = journal.recordCount
        report.expiredEntries = try removeExpired()
        if let codec { report.blobsRecompressed = try recompress(to: codec) }

        let scan = DirectoryScan(objects: store.objects, packs: store.packs)
        for (id, path) in scan.looseBlobs where index.blob(id)?.info.place != .loose {
            report.blobBytesReclaimed += Int(FileIO.status(path)?.st_size ?? 0)
            if try FileIO.remove(path) { report.danglingBlobsDeleted += 1 }
        }
        for path in scan.temporaryFiles {
            report.blobBytesReclaimed += Int(FileIO.status(path)?.st_size ?? 0)
            if try FileIO.remove(path) { report.temporaryFilesDeleted += 1 }
        }
        // Leaves first; a shard whose last leaf went is empty on the second pass.
        for _ in 0..<2 {
            for path in DirectoryScan(objects: store.objects, packs: store.packs).emptyShardDirectories
                where FileIO.removeDirectory(path) {
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
        for number in store.segmentSizes.keys where number != store.activeSegmentNumber
            && index.liveBytes(inSegment: number) == 0 {
            try store.deleteSegment(number)
        }

        try compactJournal()
        report.journalBytesAfter = Int(journal.size)
        report.journalRecordsAfter = journal.recordCount
        return report
    }

    /// Re-encodes every blob stored with a codec other than `codec`'s (blobs kept raw because
    /// compressing did not pay are tried again too). Ids do not change.
    private func recompress(to codec: Codec) throws -> Int {
        var count = 0
        for (id, blob) in index.storedBlobs where blob.info.codec != codec.tag {
            guard let location = store.location(of: blob.info),
                  case .success(let value) = try BlobStore.read(blob.info, at: location) else { continue }
            let prepared = value.withUnsafeBytes {
                BlobStore.prepare($0, id: id, codec: codec, packThreshold: store.packThreshold)
            }
            guard prepared.codec != blob.info.codec else { continue }
            var moved = BlobInfo(id: id, codec: prepared.codec, rawLength: prepared.rawLength,
                                 payloadLength: prepared.payloadLength, place: .loose)
            if prepared.packed {
                moved.place = try store.append(prepared)
            } else {
                try store.publish(BlobStore.stage(prepared, objects: store.objects, synchronous: store.synchronous))
            }
            index.relocate(moved)
            journal.append(.relocate(moved))
            try journal.flush()
            if case .loose = blob.info.place, moved.place != .loose { try store.deleteLoose(id) }
            count += 1
        }
        try evictToLimits()
        try journal.flush()
        return count
    }
}
