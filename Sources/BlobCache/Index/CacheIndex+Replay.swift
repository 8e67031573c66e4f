import Dispatch

extension CacheIndex {
    /// The two hashes a record's lookups need, computed once: its key's and its blob id's
    /// `KeyHash` (0 for a record that names none).
    struct RecordHashes {
        var key: UInt64 = 0
        var blob: UInt64 = 0
    }

    /// The `RecordHashes` of `record` under this index's seed.
    func hashes(of record: JournalRecordView) -> RecordHashes {
        RecordHashes(key: record.key.map { KeyHash.hash($0, seed: seed) } ?? 0,
                     blob: record.blob.map { KeyHash.hash($0.id, seed: seed) } ?? 0)
    }

    /// Applies one replayed journal record; `false` (and nothing changed) when the index cannot
    /// take it (`admits`): replay treats it as damage and stops there.
    @discardableResult
    mutating func apply(_ record: JournalRecord) -> Bool {
        record.withView { apply($0, hashes: hashes(of: $0)) }
    }

    /// `apply(_:)` for a record parsed in place, whose `hashes(of:)` are given. Its key must be
    /// UTF-8 as a `String` holds it (`replay` gives any other through `JournalRecord`).
    mutating func apply(_ record: JournalRecordView, hashes: RecordHashes) -> Bool {
        guard admits(record, hashes: hashes) else { return false }
        switch record {
        case .set(let entry):
            upsert(entry, hashes: hashes, orderJournaled: true)
        case .access(let key, let time):
            if let slot = slot(ofKeyBytes: key, hash: hashes.key) { touch(slot: slot, at: time, journaled: true) }
        case .remove(let key, _):
            if let slot = slot(ofKeyBytes: key, hash: hashes.key) { remove(slot: slot) }
        case .removeAll(let includingPinned):
            _ = removeAll(includingPinned: includingPinned)
        case .relocate(let blob):
            relocate(blob)
        }
        return true
    }

    /// Replays the journal records in `image` (the journal's bytes from file offset `start`, a
    /// record boundary, to its end) into this index, as `JournalReader.walk` and `apply(_:)`
    /// would one record at a time, with the same result; returns how the walk ended and how
    /// many records were good.
    ///
    ///     var index = CacheIndex()
    ///     let walk = index.replay(records: image, at: JournalFormat.headerSize, salt: salt, cipher: nil)
    ///
    /// A plain journal is replayed in batches: each batch's records are parsed where they lie
    /// (no `String` a key), and their buckets read before any is applied, so that their cache
    /// misses overlap. An empty index is first sized for the records. From `parallelFrom`
    /// bytes of journal, another core checks the CRCs ahead of this one, which applies: a
    /// batch past what it has checked has its CRCs checked here, so no record is applied
    /// unchecked, and this one never waits for the other. The other also makes the entries and
    /// blobs an index sized here is about to fill resident ahead of this one
    /// (`ReplayPrefault`), following it, once its CRCs are checked, until it is done.
    mutating func replay(records image: UnsafeRawBufferPointer, at start: Int, salt: UInt64, cipher: CacheCipher?,
                         parallelFrom: Int = parallelReplayBytes) -> (end: JournalReader.End, records: Int) {
        var sized = false
        if entries.isEmpty && blobs.isEmpty {
            // Sized once for the records there are (a compacted journal has one per entry), so
            // replay never rehashes and the tables are not oversized. Keys take at most the
            // journal's bytes. (A `set` frame is at least 84 bytes: no more entries or blobs
            // than this can be added, so their storage stays where it is.)
            reserveCapacity(min(JournalReader.countFrames(records: image), image.count / 83), keyBytes: image.count)
            sized = true
        } else if image.count >= parallelFrom, cipher == nil {
            // A long journal after a restored snapshot (a checkpoint's, after a crash): room
            // made once for what it can add, so that the replay neither copies nor rehashes as
            // it goes and the entries and blobs can be faulted in ahead of it, as above.
            sized = reserveCapacity(adding: min(JournalReader.countFrames(records: image), image.count / 83), keyBytes: image.count)
        }
        if let cipher {
            return JournalReader.walk(records: image, at: start, salt: salt, cipher: cipher) { record, _ in apply(record) }
        }
        guard image.count >= parallelFrom, Parallel.cores > 1 else {
            return applyFrames(image, at: start, salt: salt, checked: nil)
        }
        // Only an index sized here keeps its storage where the prefault finds it.
        let regions = growthRegions
        let prefault = sized ? ReplayPrefault(entries: regions.entries, blobs: regions.blobs, filled: filledBytes) : nil
        let halves = ParallelReplay(index: CacheIndex(seed: seed), image: image, start: start, salt: salt, prefault: prefault)
        swap(&self, &halves.index)   // moved, not copied: the index stays uniquely referenced
        DispatchQueue.concurrentPerform(iterations: 2) { halves.run(task: $0) }
        swap(&self, &halves.index)
        return halves.applied
    }

    /// Below this many bytes of journal, a replay checks CRCs itself: another core's start-up
    /// would cost more than it saves.
    static let parallelReplayBytes = 1 << 20

    /// Records applied a batch at a time: enough misses in flight to cover a memory latency,
    /// few enough that their buckets stay in cache until applied.
    private static let replayBatch = 16

    /// The batched replay behind `replay`. `checked`: how far another walk has checked CRCs.
    mutating func applyFrames(_ image: UnsafeRawBufferPointer, at start: Int, salt: UInt64,
                              checked: CheckedFrames?, prefault: ReplayPrefault? = nil) -> (end: JournalReader.End, records: Int) {
        var frames = JournalReader.Frames(records: image, at: start, salt: salt)
        var batch: [(record: JournalRecordView, hashes: RecordHashes, plain: Bool, kind: UInt8, offset: Int)] = []
        batch.reserveCapacity(Self.replayBatch)
        var count = 0
        while true {
            if let checked { frames.assumeChecked(upTo: checked.end) }
            // Parse a batch; `stop` is where the walk ends, if it ends within it.
            var stop: JournalReader.End?
            while batch.count < Self.replayBatch {
                let step = frames.next()
                guard case .frame(let kind, let payload, let offset) = step else {
                    if case .end(let end) = step { stop = end }
                    break
                }
                guard let record = JournalRecordView.decode(kind: kind, payload: payload) else {
                    stop = .corrupt(offset: offset, reason: JournalReader.unparsable(kind: kind))
                    break
                }
                batch.append((record, RecordHashes(), true, kind, offset))
            }
            for item in batch.indices {
                let record = batch[item].record
                if let key = record.key {
                    (batch[item].hashes.key, batch[item].plain) = KeyHash.hashNotingASCII(key, seed: seed)
                }
                if let blob = record.blob { batch[item].hashes.blob = KeyHash.hash(blob.id, seed: seed) }
            }
            for item in batch { prefetchBuckets(of: item.record, hashes: item.hashes) }
            for item in batch {
                let applied: Bool
                if !item.plain {
                    // Not plain ASCII: applied as its `String` holds it (a `String` repairs
                    // bytes that are not UTF-8), as a record-at-a-time replay does.
                    applied = apply(JournalRecord(item.record))
                } else {
                    applied = apply(item.record, hashes: item.hashes)
                }
                guard applied else {
                    return (.corrupt(offset: item.offset, reason: JournalReader.refused(kind: item.kind)), count)
                }
                count += 1
            }
            batch.removeAll(keepingCapacity: true)
            if let prefault {
                let filled = filledBytes, regions = growthRegions
                prefault.filled(entries: filled.entries, blobs: filled.blobs,
                                storage: (regions.entries.base, regions.blobs.base))
            }
            if let stop { return (stop, count) }
        }
    }

}

/// The two halves of a parallel replay, run at once by `concurrentPerform`: one core checks
/// the frames' CRCs while the other applies the records to the index, checking those the
/// first has not reached yet itself.
private final class ParallelReplay: @unchecked Sendable {
    var index: CacheIndex
    let image: UnsafeRawBufferPointer
    let start: Int
    let salt: UInt64
    let checked: CheckedFrames
    let prefault: ReplayPrefault?
    var applied = (end: JournalReader.End.clean, records: 0)

    init(index: CacheIndex, image: UnsafeRawBufferPointer, start: Int, salt: UInt64, prefault: ReplayPrefault?) {
        (self.index, self.image, self.start, self.salt, self.prefault) = (index, image, start, salt, prefault)
        checked = CheckedFrames(start: start)
    }

    func run(task: Int) {
        if task == 0 {
            checked.check(image, salt: salt) { prefault?.keepAhead() }
            prefault?.followUntilFinished()
        } else {
            prefault?.start()
            applied = index.applyFrames(image, at: start, salt: salt, checked: checked, prefault: prefault)
            prefault?.finish()
            checked.abandon()
        }
    }
}
