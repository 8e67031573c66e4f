/// An open that defers restoring its snapshot: it maps the file, checks the header and the
/// chunk digests' hash, and answers gets from the mapping (`SnapshotLookup`, each chunk checked
/// as it is read) until an operation needs the whole index, which is then restored and checked
/// as an open would have done. The open skips only what it can prove would change nothing:
/// no entry expires (the header's earliest expiry and the tail's), the limits hold (the
/// header's totals plus the tail's), no blob lies past the newest segment's end, and the
/// journal after the snapshot is short, clean and only sets, reads and removes keys.
extension CacheState {
    /// The snapshot and journal tail of an open whose restore is deferred.
    final class PendingRestore {
        /// Journal bytes after the snapshot beyond which the open restores at once (the tail
        /// is held as records until then): the default snapshot threshold, so that a run of
        /// opens that only read (each close appends access records, none writes a snapshot)
        /// soon meets an open that restores, whose close writes a new snapshot.
        static let tailLimit: Int64 = 64 << 10
        /// Gets served before the restore; the next one restores (and applies their recency).
        static let readLimit = 256

        let file: MappedFile
        let header: IndexSnapshot.Header
        var lookup: SnapshotLookup
        /// The journal's records after the snapshot, applied once it is restored.
        let tail: [JournalRecord]
        /// What the tail last says of each key (by its UTF-8 bytes): its entry, or `nil` (removed).
        let tailWords: DeferredTail
        /// Bytes of journal the restored index reflects.
        let journalEnd: Int64
        /// Keys read before the restore and when, in order.
        var reads: [(key: String, time: Int64)] = []

        /// `nil` when the open must restore now: the tail holds other records, something may
        /// have expired at `now`, the limits may be exceeded, a blob may lie past the end of
        /// `store`'s newest segment, or the digests do not match the header.
        init?(snapshot: (file: MappedFile, header: IndexSnapshot.Header), tail: [JournalRecord], journalEnd: Int64,
              now: Int64, limits: BlobCache.Limits, store: BlobStore) {
            let header = snapshot.header
            guard header.earliestExpiry > now else { return nil }
            var words = DeferredTail(seed: header.seed)
            var addedBytes = 0, addedEntries = 0
            let newest = store.activeSegmentNumber
            var newestEnd: Int64 = 0
            if header.lastSegment != CacheIndex.Blob.loose {
                guard let newest, header.lastSegment <= newest else { return nil }
                if header.lastSegment == newest { newestEnd = header.lastSegmentEnd }
            }
            for record in tail {
                switch record {
                case .set(let entry):
                    guard entry.expiry > now else { return nil }
                    // One place per blob, as the index keeps it (a journal that disagrees is replayed).
                    guard words.place(entry.blob) else { return nil }
                    if case .packed(let segment, let offset) = entry.blob.place {
                        guard let newest, segment <= newest else { return nil }
                        if segment == newest { newestEnd = max(newestEnd, Int64(offset) + Int64(entry.blob.footprint)) }
                    }
                    addedBytes += entry.blob.footprint
                    addedEntries += 1
                    words.record(entry, forKey: Array(entry.key.utf8))
                case .remove(let key, _):
                    words.record(nil, forKey: Array(key.utf8))
                case .access:
                    break
                case .removeAll, .relocate:
                    return nil
                }
            }
            if let newest {
                // A newest segment without a good header (a power cut as it was started) is
                // deleted by an open that trims: this one must not append to it.
                guard newestEnd <= store.activeEnd, store.activeEnd >= Int64(PackFormat.segmentHeaderSize),
                      (try? store.hasValidHeader(newest)) == true else { return nil }
            }
            if let max = limits.maxStoredBytes { guard header.storedBytes + addedBytes <= max else { return nil } }
            if let max = limits.maxEntries { guard header.entryCount + addedEntries <= max else { return nil } }
            guard let lookup = SnapshotLookup(file: snapshot.file, header: header) else { return nil }
            file = snapshot.file
            self.header = header
            self.lookup = lookup
            self.tail = tail
            tailWords = words
            self.journalEnd = journalEnd
        }

        /// The entry of `key` as the snapshot and the tail have it; `nil` when the lookup needs
        /// the whole index (a chunk failed its digest, or a bound).
        func entry(forKey key: String) -> SnapshotLookup.Found?? {
            let bytes = Array(key.utf8)
            if let last = tailWords.lastWord(onKey: bytes) { return .some(last.map { SnapshotLookup.Found(blob: $0.blob, expiry: $0.expiry) }) }
            switch bytes.withUnsafeBytes({ lookup.find($0) }) {
            case .found(let found): return .some(found)
            case .absent: return .some(nil)
            case .unusable: return nil
            }
        }
    }

    /// What a get before the restore came to.
    enum EarlyRead {
        case found(ReadTicket)
        case absent
        /// The index is needed: restore, then read as usual.
        case needsIndex
        /// There is no deferred restore (any more): read as usual.
        case restored
    }

    /// A read of `key` answered from the snapshot while the restore is deferred, when the
    /// index is `current` (no other open wrote since) and the entry is found and unexpired in
    /// checked chunks; the read's recency is applied at the restore.
    func readBeforeRestore(key: String, current: Bool) throws -> EarlyRead {
        guard let pending = pendingRestore else { return .restored }
        // Recency waits no longer than a read's would (`pendingAccessesDue`): once the oldest
        // read is `accessJournalInterval` old, the restore queues them for the journal.
        let (waited, overflow) = now().subtractingReportingOverflow(pending.reads.first?.time ?? Int64.max)
        guard pending.reads.count < PendingRestore.readLimit, pending.reads.isEmpty || !overflow && waited < accessInterval,
              current, let found = pending.entry(forKey: key) else {
            return .needsIndex
        }
        guard let found else {
            counters.misses += 1
            telemetry.missed(key: key)
            return .absent
        }
        let time = now()
        guard found.expiry > time else { return .needsIndex }
        let info = found.blob
        let remembered = memory.value(for: info.id)
        let location = remembered == nil ? try store.location(of: info) : nil
        pending.reads.append((key, time))
        counters.countHit(bytes: info.rawLength, fromMemory: remembered != nil)
        if telemetry.metrics != nil { telemetry.hit(key: key, bytes: info.rawLength, fromMemory: remembered != nil) }
        return .found(ReadTicket(info: info, location: location, value: remembered,
                                 remember: remembered == nil && memory.admit(info.id, size: info.rawLength),
                                 releases: releases))
    }

    /// Restores the deferred index: the snapshot checked whole, the tail applied, then the
    /// recency of the reads made before. A snapshot that fails its checks is deleted and the
    /// journal replayed up to where the open left it; when that does not replay cleanly
    /// either, the cache stops (`needsReopen`: the next open recovers the journal). The reads
    /// made before whose accesses are due for the journal wait in `readsDueForJournal`.
    func finishRestoring() throws {
        guard let pending = pendingRestore else { return }
        pendingRestore = nil
        var due: [(key: String, time: Int64)] = []
        do {
            restoredIndex = try restoredIndex(of: pending, due: &due)
            restoredIndex.useSegments(segmented)
        } catch {
            // Nothing may be written from the empty index left in place.
            if journal.failure == nil { journal.abandon(because: error) }
            throw error
        }
        readsDueForJournal += due
    }

    private func restoredIndex(of pending: PendingRestore, due: inout [(key: String, time: Int64)]) throws -> CacheIndex {
        var index: CacheIndex
        if var restored = IndexSnapshot.restore(pending.file, header: pending.header),
           pending.tail.allSatisfy({ restored.apply($0) }) {
            index = restored
        } else {
            removeSnapshot(ifStill: pending)
            snapshotCoverage = nil
            guard let replayed = try replayedIndex(upTo: pending.journalEnd) else {
                throw BlobCacheError.needsReopen(path: files.root.string, reason: "the index snapshot and the journal do not agree")
            }
            index = replayed
            // The open skipped its checks on the header's word, which no longer stands.
            pendingOpenChecks = true
        }
        for (key, time) in pending.reads {
            guard let slot = index.slot(of: key) else { continue }
            let (elapsed, overflow) = time.subtractingReportingOverflow(index.entry(at: slot).journaledAccess)
            index.touch(slot: slot, at: time, journaled: false)
            if overflow || elapsed >= accessInterval { due.append((key, time)) }
        }
        return index
    }

    /// `finishRestoring()` for a use of the index that cannot throw: a failure stops the cache
    /// (every later operation throws it), so nothing is written from an index not restored.
    /// Every path that may use the index restores first (`Engine.read`, `Engine.write`,
    /// `DirectorySharing.underFlock`): this is the backstop, and tests (debug builds) stop
    /// when it is reached.
    func restoreNow() {
        assertionFailure("the index was used before its deferred restore was finished")
        try? finishRestoring()
    }

    /// What an open does after its replay that a deferred open skipped on the header's word:
    /// entries whose record lies past the newest segment's end dropped (nothing is cut: other
    /// opens may exist by now), expired entries removed. Runs under the flock, in `perform`.
    func finishOpenChecks() throws {
        try trimNewestSegment(alone: false)
        _ = removeExpired()
        pendingOpenChecks = false
    }

    /// Deletes `DIR/index` when it is still the snapshot `pending` mapped (its header page the
    /// same): without the flock, another open's close may have put a good one in its place.
    private func removeSnapshot(ifStill pending: PendingRestore) {
        IndexSnapshot.remove(files.snapshot, io: io, ifItBegins: pending.file.bytes[0..<IndexSnapshot.page])
    }

    /// Ends a close while the restore is still deferred: the recency of the reads made before it
    /// goes to the journal as access records (replayed, they give the order a restored index
    /// would have journaled), and nothing else needs the index. Under the flock.
    func journalReadsBeforeRestore() {
        guard let pending = pendingRestore else { return }
        for (key, time) in pending.reads { journal.append(.access(key: key, time: time)) }
        pending.reads.removeAll()
    }

    /// The index the journal's records up to `end` make, replayed from the start; `nil` when
    /// they do not replay cleanly.
    private func replayedIndex(upTo end: Int64) throws -> CacheIndex? {
        var index = CacheIndex(segmented: segmented)
        let start = Int64(JournalFormat.headerSize)
        let walk = try MappedFile.withContents(of: journal.descriptor, from: start, size: end, path: journal.path, io: io) { records in
            index.replay(records: records, at: Int(start), salt: journal.header.salt, cipher: journal.cipher)
        }
        return walk.end == .clean ? index : nil
    }
}
