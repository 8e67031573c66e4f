import SystemPackage

extension CacheState {
    /// Opens the cache state in `directory` (the caller holds the directory's flock): replays
    /// the journal, repairs what a crash can leave, drops expired entries and trims to the
    /// limits. Only an open that is `alone` (no other open of the directory anywhere) cuts the
    /// newest segment's tail, which another open could be reading. `beforeChanges` runs before
    /// anything but the store's folders is changed (the sharing marks the directory as changing).
    static func open(files: CacheFiles, io: FileIO, configuration: BlobCache.Configuration, limits: BlobCache.Limits,
                     alone: Bool, previousHolderCrashed: Bool, changeHub: ChangeHub?, telemetry: Telemetry,
                     beforeChanges: () throws -> Void) throws -> (CacheState, BlobCache.OpenReport) {
        let synchronous = configuration.durability == .powerLossSafe
        // (The caller checked the key against the journal before taking the lock; it is checked
        // again where the header is read below, in case the journal changed in between.)
        let cipher = try configuration.encryption.map(CacheCipher.init)
        let store = try BlobStore(files: files, io: io,
                                  segmentLimit: Int64(segmentLimit(configuration: configuration, limits: limits)),
                                  synchronous: synchronous)
        let pipeline = BlobPipeline(files: files, io: io, compression: configuration.compression,
                                    packThreshold: configuration.packThreshold, durability: configuration.durability,
                                    cipher: cipher)
        try beforeChanges()
        let journalPath = files.journal
        try io.remove(CacheFiles.temporary(for: journalPath))
        try io.remove(CacheFiles.temporary(for: files.snapshot))
        var report = BlobCache.OpenReport()
        let clock = configuration.clock
        let now = Nanoseconds.from(clock.now())
        let segmented = configuration.eviction == .segmentedLRU
        var index = CacheIndex(segmented: segmented)
        var journal: JournalFile?
        var rebuild: String?
        var snapshotCoverage: Int64?
        var pending: PendingRestore?
        if let fd = try io.openIfExists(journalPath, .readWrite) {
            let image = try io.read(fd, count: JournalFormat.headerSize, at: 0, path: journalPath)
            let header = image.withUnsafeBytes { JournalFormat.decodeHeader($0) }
            switch header {
            case .failure(.newerVersion(let version)):
                io.close(fd)
                throw BlobCacheError.unsupportedFormat(path: journalPath.string, version: version)
            case .failure(.damaged(let reason)):
                io.close(fd)
                rebuild = reason
            case .success(let header):
                do { try header.requireKey(cipher, cache: files.root.string) } catch {
                    io.close(fd)
                    throw error
                }
                let fileSize = try io.fileSize(fd, path: journalPath)
                // With a snapshot that matches, only the records after it are read and replayed. A
                // snapshot with a short journal after it may be restored later (`PendingRestore`):
                // mapped without reading it all, the tail's records kept rather than applied.
                var priorRecords = 0
                let mayDefer = cipher == nil && !previousHolderCrashed
                func defers(_ header: IndexSnapshot.Header) -> Bool {
                    mayDefer && fileSize - header.journalLength <= PendingRestore.tailLimit
                }
                var snapshot = try mapSnapshot(files: files, io: io, journalSalt: header.salt, journalSize: fileSize,
                                               cipher: cipher, prefault: { !defers($0) })
                var tail: [JournalRecord]?
                if let mapped = snapshot {
                    if defers(mapped.header) {
                        tail = []
                    } else if let restored = try restoreSnapshot(mapped, files: files, io: io) {
                        index = restored
                    } else {
                        snapshot = nil
                    }
                }
                // Read when short, else mapped (`withContents`): nothing is allocated for what a
                // file merely claims, and a long journal is not copied into fresh memory first.
                func replay(from start: Int64) throws -> (end: JournalReader.End, records: Int) {
                    try MappedFile.withContents(of: fd, from: start, size: fileSize, path: journalPath, io: io,
                                                mappingFrom: CacheIndex.parallelReplayBytes) { records in
                        guard tail == nil else {
                            return JournalReader.walk(records: records, at: Int(start), salt: header.salt, cipher: cipher) { record, _ in
                                tail!.append(record)
                                return true
                            }
                        }
                        return index.replay(records: records, at: Int(start), salt: header.salt, cipher: cipher)
                    }
                }
                var walk = try replay(from: snapshot?.header.journalLength ?? Int64(JournalFormat.headerSize))
                if let mapped = snapshot, let records = tail {
                    tail = nil
                    if walk.end == .clean, let deferred = PendingRestore(snapshot: mapped, tail: records, journalEnd: fileSize,
                                                                          now: now, limits: limits, store: store) {
                        pending = deferred
                    } else if var restored = try restoreSnapshot(mapped, files: files, io: io),
                              records.allSatisfy({ restored.apply($0) }) {
                        index = restored
                    } else {
                        // The snapshot or a record after it fails: the whole journal, as without one.
                        _ = try io.remove(files.snapshot)
                        snapshot = nil
                        index = CacheIndex(segmented: segmented)
                        walk = try replay(from: Int64(JournalFormat.headerSize))
                    }
                }
                if let mapped = snapshot {
                    priorRecords = mapped.header.journalRecords
                    snapshotCoverage = mapped.header.journalLength
                    report.restoredFromSnapshot = true
                }
                report.replayedRecords = walk.records
                var size = fileSize
                switch walk.end {
                case .clean: break
                case .tornTail(let validEnd):
                    try io.truncate(fd, to: Int64(validEnd), path: journalPath)
                    size = Int64(validEnd)
                    report.recovery = .truncatedTornTail(at: validEnd, bytesCut: Int(fileSize) - validEnd)
                case .corrupt(let offset, let reason):
                    // A key that passed the 2^-32 check by chance: the very first record's CRC
                    // holds and its seal does not open. Refused, not rewritten as damage.
                    if cipher != nil, offset == JournalFormat.headerSize, reason == JournalReader.sealFailure {
                        io.close(fd)
                        throw BlobCacheError.wrongEncryptionKey(path: files.root.string)
                    }
                    report.recovery = .stoppedAtCorruption(offset: offset, reason: reason)
                }
                journal = JournalFile(path: journalPath, io: io, descriptor: fd, header: header, size: size,
                                      recordCount: priorRecords + walk.records, synchronous: synchronous, cipher: cipher)
            }
        } else if try directoryHoldsBlobs(store) {
            rebuild = "journal is missing"
        }

        if let reason = rebuild {
            let adoption = try adoptBlobs(in: store, pipeline: pipeline, into: &index, now: now)
            report.recovery = .rebuiltFromBlobs(reason: reason, adopted: adoption.adopted, removed: adoption.removed)
        }
        let engine = CacheState(
            files: files, io: io, pipeline: pipeline, store: store,
            journal: try journal ?? JournalFile.fresh(at: journalPath, io: io, created: now, synchronous: synchronous,
                                                             cipher: cipher),
            index: index, snapshotCoverage: snapshotCoverage, limits: limits, configuration: configuration,
            changeHub: changeHub, telemetry: telemetry)
        if journal == nil || report.recovery.requiresRewrite {
            try engine.compactJournal()
        }
        if previousHolderCrashed || report.recovery != .none { try engine.sweepStaleTemporaries() }
        if let pending {
            // Nothing to trim, expire or evict (`PendingRestore`): a dead tail of the newest
            // segment stays for pack collection.
            engine.pendingRestore = pending
        } else {
            try engine.trimNewestSegment(alone: alone)
            let evictionsBefore = engine.counters.evictions
            report.expiredAtOpen = try engine.perform { engine.removeExpired() }
            report.evictedAtOpen = engine.counters.evictions - evictionsBefore
        }
        engine.counters = BlobCache.Counters()
        return (engine, report)
    }

    /// Segment size: 1/16 of the byte cap (so that the newest segment, which GC does not
    /// touch, stays a small part of it), between 64 KiB and the configured limit.
    private static func segmentLimit(configuration: BlobCache.Configuration, limits: BlobCache.Limits) -> Int {
        guard let cap = limits.maxStoredBytes else { return configuration.packSegmentLimit }
        return min(configuration.packSegmentLimit, max(64 << 10, cap / 16))
    }

    private static func directoryHoldsBlobs(_ store: BlobStore) throws -> Bool {
        try store.hasSegments || !store.io.listDirectory(store.files.objects).isEmpty
    }

    /// Cuts the newest segment back to the end of its last live record, dropping a torn or
    /// unreferenced tail, so that appends continue from a record boundary. Entries whose record
    /// the journal places past the file's end (lost in a power cut, or a damaged length) are
    /// dropped first: the segment is never extended to meet them. Not `alone`, nothing is cut
    /// (another open may be reading the tail's records, which its index still names): appends
    /// go after the tail, which becomes dead bytes for pack collection.
    func trimNewestSegment(alone: Bool) throws {
        guard let newest = store.activeSegmentNumber else { return }
        let fileEnd = store.activeEnd
        var end = Int64(PackFormat.segmentHeaderSize)
        var lost: Set<BlobID> = []
        index.forEachBlob { blob in
            guard blob.segment == newest else { return }
            let recordEnd = Int64(blob.offset) + Int64(blob.info.footprint)
            if recordEnd <= fileEnd { end = max(end, recordEnd) } else { lost.insert(blob.id) }
        }
        if !lost.isEmpty {
            for slot in index.liveSlots where lost.contains(index.blob(ofEntry: slot).id) { remove(slot: slot, reason: .damaged) }
        }
        guard alone else { return }
        if end == Int64(PackFormat.segmentHeaderSize), try !store.hasValidHeader(newest) {
            try store.deleteSegment(newest)   // a crash while it was being started: it holds nothing
        } else {
            try store.trimActiveSegment(to: end)
        }
    }

    /// When the journal's header is lost, keys are gone; every intact blob on disk is kept as a
    /// content-addressed entry (readable by id, evictable); damaged blobs and temporary files
    /// are removed, files with names the cache does not give are left alone. Blobs that do not
    /// open under the open's key are kept, not adopted; sealed blobs with no key, or no blob
    /// opening under the key, fail the open (`encryptionKeyRequired`, `wrongEncryptionKey`).
    private static func adoptBlobs(in store: BlobStore, pipeline: BlobPipeline, into index: inout CacheIndex, now: Int64)
        throws -> (adopted: Int, removed: Int) {
        let io = store.io
        var adopted = 0, removed = 0
        var unopened = 0, sealedSeen = false
        func adopt(_ info: BlobInfo) {
            guard index.blob(info.id) == nil else { return }
            index.upsert(EntryRecord(key: BlobCache.contentAddressedKeyPrefix + info.id.hex, blob: info, pinned: false,
                                     created: now, expiry: Nanoseconds.never, access: now), orderJournaled: true)
            adopted += 1
        }
        let scan = try DirectoryScan(files: store.files, io: store.io)
        for (id, path) in scan.looseBlobs {
            switch try verifiedLooseBlob(id, at: path, pipeline: pipeline) {
            case .intact(let info): adopt(info)
            case .unopened(let sealed):
                unopened += 1
                sealedSeen = sealedSeen || sealed
            case .damaged:
                try io.remove(path)
                removed += 1
            }
        }
        // Only what bears the cache's own names goes: files it does not know are someone
        // else's (fsck reports them as unknown-file).
        for path in scan.temporaryFiles where try !io.isDirectory(path) && path.lastComponent.map(CacheFiles.stagingOwnerIsGone) ?? false {
            try io.remove(path)
            removed += 1
        }
        var recordsUnopened = 0
        for number in store.segmentNumbers {
            // Read, or mapped when large (`MappedFile.withContents`); an unreadable segment fails
            // the open rather than being passed over (and then trimmed or collected as if empty).
            _ = try MappedFile.withContents(of: store.files.segmentPath(number), io: io) { bytes in
                guard PackFormat.checkSegmentHeader(bytes, number: number) == nil else { return }
                _ = PackScanner.scan(bytes, cipher: pipeline.cipher) { offset, header, result in
                    if case .failure(.sealing) = result {
                        recordsUnopened += 1
                        sealedSeen = sealedSeen || header.sealed
                    }
                    guard case .success(let value) = result, pipeline.hasher.id(of: value) == header.id else {
                        removed += 1
                        return
                    }
                    adopt(BlobInfo(id: header.id, codec: header.codec, rawLength: header.rawLength,
                                   payloadLength: header.payloadLength,
                                   place: .packed(segment: number, offset: UInt64(offset))))
                }
            }
        }
        // Sealed blobs and no key: the cache is encrypted, and a plain rebuild would leave its
        // blobs to be collected as dangling. None opened: the key is not the cache's. Blobs that
        // did not open are never deleted here (leftovers of a rekey under another key, or a
        // plain cache's blobs): `compact` deletes them once a journal that does not name them
        // is in place under the right key.
        let path = store.files.root.string
        if pipeline.cipher == nil && sealedSeen { throw BlobCacheError.encryptionKeyRequired(path: path) }
        if adopted == 0 && unopened + recordsUnopened > 0 {
            throw sealedSeen ? BlobCacheError.wrongEncryptionKey(path: path) : BlobCacheError.cacheNotEncrypted(path: path)
        }
        return (adopted, removed)
    }

    /// What a full check of a loose blob found.
    private enum LooseBlobCheck {
        case intact(BlobInfo)
        /// Its seal did not open (`sealed`) or it is plain in an encrypted cache.
        case unopened(sealed: Bool)
        case damaged
    }

    /// Reads and fully verifies (its id included) a loose blob.
    private static func verifiedLooseBlob(_ id: BlobID, at path: CachePath, pipeline: BlobPipeline) throws -> LooseBlobCheck {
        // A pieced blob (format 4) a piece at a time: a value of any size in bounded memory.
        if let pieced = PiecedBlobReader.verifyFile(at: path, io: pipeline.io, id: id, cipher: pipeline.cipher) {
            switch (pieced.damage, pieced.header) {
            case (nil, let header?):
                return .intact(BlobInfo(id: id, codec: header.codec, rawLength: header.rawLength,
                                        payloadLength: header.payloadLength, place: .loose))
            case (.sealing?, let header): return .unopened(sealed: header?.sealed ?? false)
            default: return .damaged
            }
        }
        // (One larger than any blob is damaged, not mapped: a sparse file can claim exabytes.)
        return try MappedFile.withContents(of: path, io: pipeline.io,
                                           atMost: Int64(LooseBlobFormat.headerSize + BlobInfo.maxLength)) { bytes -> LooseBlobCheck in
            guard case .success(let header) = LooseBlobFormat.parseHeader(bytes) else { return .damaged }
            switch LooseBlobFormat.decode(file: bytes, expecting: nil, id: id, cipher: pipeline.cipher) {
            case .failure(.sealing): return .unopened(sealed: header.sealed)
            case .failure: return .damaged
            case .success(let value):
                guard pipeline.hasher.id(of: value) == id else { return .damaged }
                return .intact(BlobInfo(id: id, codec: header.codec, rawLength: header.rawLength,
                                        payloadLength: header.payloadLength, place: .loose))
            }
        } ?? .damaged
    }
}
