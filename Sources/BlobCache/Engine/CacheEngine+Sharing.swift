import Synchronization
import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Many opens of one directory (docs/ARCHITECTURE.md, "Many processes"): every operation that
/// writes holds `DIR/lock`'s flock and first catches up with what other opens committed; a
/// read on an index that is current (`DIR/sequence` unchanged) takes no lock at all.
extension CacheEngine {
    /// Thrown inside an operation run without the flock when it finds it must write (an
    /// expired entry to remove, limits to enforce): the operation runs again under the flock.
    struct NeedsLock: Error {}

    /// Accesses a read without the flock keeps for the journal before it takes the flock to
    /// write them (`writePendingAccesses`); it takes it too once the oldest is
    /// `accessJournalInterval` old, so that recency reaches the journal as often as alone.
    static let accessBatchLimit = 256

    /// Whether the pending accesses are due for the journal.
    var pendingAccessesDue: Bool {
        guard !pendingAccesses.isEmpty else { return false }
        if pendingAccesses.count >= Self.accessBatchLimit { return true }
        let (elapsed, overflow) = now().subtractingReportingOverflow(pendingSince)
        return overflow || elapsed >= accessInterval
    }

    /// Whether no other open committed anything since this one last caught up: one atomic load.
    var isCurrent: Bool { sequence.map { $0.value == appliedSequence } ?? false }

    /// Runs `body` (which must not write, or throws `NeedsLock` before it does) without the
    /// flock when the index is current, else under it.
    func read<T>(_ body: () throws -> T) throws -> T {
        try finishRestoring()
        if !holdsLock, !pendingAccessesDue, isCurrent || catchUpWithoutLock() {
            do { return try body() } catch is NeedsLock {}
        }
        return try exclusively(body)
    }

    /// Brings the index up to date without the flock when other opens only appended records:
    /// replays the records after this open's end up to the journal's committed end (published
    /// in `DIR/sequence` by every writer before it lets the flock go; bytes past it are a
    /// write in progress, or one that failed and will be cut). Returns whether a read may go
    /// on: every operation acknowledged before the call is in the index. The index counts as
    /// current (`isCurrent`) only when no writer was inside meanwhile: the sequence even and
    /// unchanged from before the replay to after it, as a seqlock reader checks. `false` sends
    /// the read to the flock: a rewritten journal, damage, no sequence, a failed read.
    func catchUpWithoutLock() -> Bool {
        guard let sequence else { return false }
        let seen = sequence.value
        let committed = Int64(clamping: sequence.committedEnd)
        // Loaded before the `fstat`: a journal rewritten since has no link left by then.
        guard let status = try? io.system.status(journal.descriptor), status.st_nlink > 0 else { return false }
        let end = min(committed, Int64(status.st_size))
        // Behind this open's own end (not the journal it knows), or more than a read's worth
        // (which would be mapped, and a cut under a mapping faults): the flock sorts it out.
        guard end >= journal.size, end - journal.size <= Int64(MappedFile.readLimit) else { return false }
        if end > journal.size {
            // Committed records end cleanly; anything else is damage, for the flock's catch-up.
            guard (try? replayAppended(upTo: end, cutTail: false)) == true else { return false }
        }
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if seen & 1 == 0, end == committed, sequence.value == seen { appliedSequence = seen }
        return true
    }

    /// Runs `body` holding the flock, caught up with other opens first. The sequence is odd
    /// while it runs (a read elsewhere then takes the flock and waits) and ends 2 higher when
    /// the journal changed, so every other open catches up at its next operation. Pending
    /// records are written before the flock goes: none may outlive it (another open appends next).
    /// `keepingDeferredRestore`: a deferred restore (`pendingRestore`) stays deferred when no
    /// other open changed anything (the catch-up then needs no index), for a `body` that does
    /// not use the index; otherwise it is finished first, before the catch-up.
    func exclusively<T>(keepingDeferredRestore: Bool = false, _ body: () throws -> T) throws -> T {
        if holdsLock { return try body() }
        try lock.hold()
        holdsLock = true
        defer {
            holdsLock = false
            lock.release()
        }
        if pendingRestore != nil, !keepingDeferredRestore || sequence?.value != checkedSequence || checkedSequence == nil {
            try finishRestoring()
        }
        let catchUpCut = try catchUp()
        let before = (file: ObjectIdentifier(journal.file), size: journal.size)
        sequence?.store(appliedSequence + 1)
        let storeChanges = store.changes
        let failedBefore = journal.failure != nil
        defer {
            let failed = journal.failure != nil
            let changed = catchUpCut || ObjectIdentifier(journal.file) != before.file || journal.size != before.size
                || store.changes != storeChanges || failed != failedBefore
            if changed { appliedSequence += 2 }
            // The journal's size counts only records whose writes succeeded (a failed write is
            // cut back): what reads without the flock may replay.
            if !failed { sequence?.publish(committedEnd: journal.size) }
            sequence?.store(appliedSequence)
            checkedSequence = failed ? nil : appliedSequence
        }
        try writePendingAccesses()
        // (Kept for the next operation if it fails: this one goes on.)
        if pendingOpenChecks { try? perform { try finishOpenChecks() } }
        let result = Result { try body() }
        if journal.hasPending && journal.failure == nil { try journal.flush() }
        return try result.get()
    }

    /// Brings the index up to date with the journal: replays the records appended since this
    /// open's end, or reloads a journal another open rewrote. Called holding the flock, before
    /// anything is written. Unless the sequence still holds the value this open left at its
    /// last operation under the flock (`checkedSequence`: nothing changed since, as every
    /// writer moves it and a killed one leaves it odd), the journal and the active segment are
    /// checked with `fstat` (a catch-up without the flock does not check the active segment),
    /// so appends always go at the files' true ends.
    /// Returns whether it cut the journal (a dead writer's tail, or damage found reloading):
    /// a change other opens must see, whatever the operation then does.
    @discardableResult
    func catchUp() throws -> Bool {
        let value = sequence?.value
        if let value, value == checkedSequence { return false }   // nobody wrote since this open's last operation
        checkedSequence = nil
        journalCut = false
        let status: stat
        do throws(Errno) { status = try io.system.status(journal.descriptor) } catch {
            throw BlobCacheError.io(operation: "fstat", path: journal.path.string, errno: error)
        }
        if status.st_nlink == 0 || Int64(status.st_size) < journal.size {
            try reload()
        } else if Int64(status.st_size) > journal.size {
            try replayAppended(upTo: Int64(status.st_size), cutTail: true)
        }
        try store.refreshActive()
        if let value {
            // Odd: a writer died inside an operation; what it left is taken in now.
            let even = (value + 1) & ~1
            if even != value { sequence?.store(even) }
            appliedSequence = even
        }
        return journalCut
    }

    /// Replays the records other opens appended, from this journal's end to `end`; returns
    /// whether they ended cleanly. A torn or damaged tail is cut when `cutTail` (the flock is
    /// held, so no live writer is inside: one died mid-write), as an open cuts it; without the
    /// flock it is left for the next open that holds it, and this journal ends before it.
    @discardableResult
    private func replayAppended(upTo end: Int64, cutTail: Bool) throws -> Bool {
        let start = journal.size
        var reached: [UInt32: Int64] = [:]
        var relocatedFrom: Set<UInt32> = []
        func note(_ info: BlobInfo) {
            if case .packed(let number, let offset) = info.place {
                reached[number] = max(reached[number] ?? 0, Int64(offset) + Int64(info.footprint))
            }
        }
        let walk = try MappedFile.withContents(of: journal.descriptor, from: start, size: end, path: journal.path, io: io) { records in
            JournalReader.walk(records: records, at: Int(start), salt: journal.header.salt, cipher: journal.cipher) { record, _ in
                switch record {
                case .set(let entry): note(entry.blob)
                case .relocate(let blob):
                    if case .packed(let number, _)? = index.blob(blob.id)?.info.place { relocatedFrom.insert(number) }
                    note(blob)
                default: break
                }
                return applyReplayed(record)
            }
        }
        var validEnd = end
        switch walk.end {
        case .clean: break
        case .corrupt where cutTail:
            // Not a dead writer's unfinished record (that is a torn tail): damage, or this
            // open's end is not where the file's records are. Replaying the whole journal
            // finds the true boundary; cutting here could cut others' records.
            try reload()
            return false
        case .tornTail(let offset), .corrupt(let offset, _):
            validEnd = Int64(offset)
            if cutTail {
                try io.truncate(journal.descriptor, to: validEnd, path: journal.path)
                journalCut = true
            }
        }
        journal.adoptAppended(upTo: validEnd, count: walk.records)
        for (number, recordEnd) in reached {
            store.dropIfReplaced(number)
            store.learn(segment: number, end: recordEnd)
        }
        for number in relocatedFrom where index.liveBytes(inSegment: number) == 0 { store.closeIfRetired(number) }
        return validEnd == end
    }

    /// Loads the journal another open put in place of this one (a rewrite): from the snapshot
    /// when it matches, plus the records after it.
    private func reload() throws {
        let path = files.journal
        guard let fd = try io.openIfExists(path, .readWrite) else {
            throw BlobCacheError.needsReopen(path: files.root.string, reason: "the journal was removed by another process")
        }
        var keep = false
        defer { if !keep { io.close(fd) } }
        let image = try io.read(fd, count: JournalFormat.headerSize, at: 0, path: path)
        guard case .success(let header) = image.withUnsafeBytes({ JournalFormat.decodeHeader($0) }) else {
            throw BlobCacheError.needsReopen(path: files.root.string, reason: "another process left the journal's header damaged")
        }
        do { try header.requireKey(journal.cipher, cache: files.root.string) } catch {
            throw BlobCacheError.needsReopen(path: files.root.string, reason: "the journal another process wrote does not fit this open's key: \(error)")
        }
        let fileSize = try io.fileSize(fd, path: path)
        var fresh = CacheIndex()
        var start = Int64(JournalFormat.headerSize), prior = 0
        snapshotCoverage = nil
        if let snapshot = try Self.restoreSnapshot(files: files, io: io, journalSalt: header.salt, journalSize: fileSize,
                                                       cipher: journal.cipher) {
            fresh = snapshot.index
            start = snapshot.header.journalLength
            prior = snapshot.header.journalRecords
            snapshotCoverage = start
        }
        let walk = try MappedFile.withContents(of: fd, from: start, size: fileSize, path: path, io: io) { records in
            fresh.replay(records: records, at: Int(start), salt: header.salt, cipher: journal.cipher)
        }
        var size = fileSize
        switch walk.end {
        case .clean: break
        case .tornTail(let offset), .corrupt(let offset, _):
            size = Int64(offset)
            try io.truncate(fd, to: size, path: path)
            journalCut = true
        }
        keep = true
        journal = JournalFile(path: path, io: io, descriptor: fd, header: header, size: size,
                              recordCount: prior + walk.records, synchronous: journal.synchronous, cipher: journal.cipher)
        if recordsChanges { noteDifferences(from: index, to: fresh) }
        index = fresh
        // Whatever the other open removed is gone from the memory tier too.
        memory.removeAll()
        releases &+= 1
        try store.rescan()
        index.forEachBlob { blob in
            if case .packed(let number, let offset) = blob.info.place {
                store.learn(segment: number, end: Int64(offset) + Int64(blob.info.footprint))
            }
        }
    }

    /// Records the changes between the index before a reload and after it (another open
    /// rewrote the journal, so its records are gone): keys with a new value are `.set`, keys
    /// gone are `.removed`, `expired` when their expiry has passed and `explicit` otherwise
    /// (the rewrite kept no record of why).
    private func noteDifferences(from old: CacheIndex, to new: CacheIndex) {
        let time = now()
        for slot in old.liveSlots {
            let key = old.key(at: slot)
            if new.slot(of: key) == nil {
                madeChanges.append(.removed(key: key, reason: old.entry(at: slot).expiry <= time ? .expired : .explicit))
            }
        }
        for slot in new.liveSlots {
            let key = new.key(at: slot), id = new.blob(ofEntry: slot).id
            if old.slot(of: key).map({ old.blob(ofEntry: $0).id }) != id { madeChanges.append(.set(key: key, id: id)) }
        }
    }

    /// Journals the accesses reads without the flock left pending, oldest first, each only
    /// when no newer access (by another open) is known. The entries stay where the reads put
    /// them (one whose access a reload lost is used again now). Called holding the flock.
    func writePendingAccesses() throws {
        guard !pendingAccesses.isEmpty else { return }
        let accesses = pendingAccesses.sorted { $0.value < $1.value }
        pendingAccesses.removeAll()
        for (exact, time) in accesses {
            let key = exact.key
            guard let slot = index.slot(of: key) else { continue }
            let access = index.entry(at: slot).access
            if access > time { continue }
            if access < time { index.touch(slot: slot, at: time, journaled: false) }
            index.markAccessJournaled(slot: slot, at: time)
            journal.append(.access(key: key, time: time))
        }
    }

    /// Adds this open's counts to those saved in `DIR/stats` by every open before it (under
    /// the flock, so that no open's counts are lost).
    func saveCounters() throws {
        try (BlobCache.Counters.saved(in: files, io: io) + counters).save(in: files, io: io)
    }
}
