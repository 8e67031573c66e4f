import Synchronization
import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One open's part in sharing its directory with other opens, in this process and others
/// (docs/ARCHITECTURE.md, "Many processes"), around the cache state, which knows nothing of
/// them: every operation that writes holds `DIR/lock`'s flock and first catches up with what
/// the others committed (`underFlock`); a read on an index that is current (`DIR/sequence`
/// unchanged) takes no lock at all, and the accesses it makes due for the journal wait here
/// for the next operation under the flock. Lives inside the engine's in-process lock.
///
///     try sharing.underFlock { writer in try writer.commit { … } }
final class DirectorySharing: @unchecked Sendable {
    /// The cache state of this open.
    let state: CacheState
    /// `DIR/lock`, whose flock every operation that writes holds.
    let lock: DirectoryLock
    /// `DIR/sequence`: every writer moves it, so an open whose index was brought up to date at
    /// the value it still holds is current without reading anything.
    let sequence: ChangeSequence
    /// The sequence at which the index was last brought up to date (even).
    private(set) var appliedSequence: UInt64
    /// The sequence this open left at the end of its last operation under the flock, whose
    /// catch-up checked the journal's and the active segment's files: while the sequence still
    /// holds it no other open changed anything (every writer moves it), so the next operation
    /// under the flock needs no `fstat` at all (how a process alone keeps its speed).
    private var checkedSequence: UInt64?
    /// Accesses that reads without the flock made due for the journal, by key: written by the
    /// next operation that holds it (`writePendingAccesses`).
    private var pendingAccesses = [ExactKey: Int64]()   // not `[:]`, whose initializer instantiates the storage type
    /// When the oldest pending access was made.
    private var pendingSince: Int64 = 0

    /// Accesses a read without the flock keeps for the journal before it takes the flock to
    /// write them (`writePendingAccesses`); it takes it too once the oldest is
    /// `accessJournalInterval` old, so that recency reaches the journal as often as alone.
    static let accessBatchLimit = 256

    /// Shares `state`, just opened under the flock (which the caller still holds): publishes
    /// what the open wrote, so that every other open catches up at its next operation.
    init(state: CacheState, lock: DirectoryLock, sequence: ChangeSequence) {
        self.state = state
        self.lock = lock
        self.sequence = sequence
        appliedSequence = (sequence.value | 1) + 1
        sequence.publish(committedEnd: state.journal.size)
        sequence.store(appliedSequence)
        checkedSequence = appliedSequence
    }

    /// Opens the cache state in `files` and shares it (the caller holds `lock`'s flock). The
    /// sequence is odd from before the open's first change to its end: an open that fails
    /// midway leaves it odd, so every other open checks the files at its next write.
    static func open(files: CacheFiles, io: FileIO, configuration: BlobCache.Configuration, limits: BlobCache.Limits,
                     lock: DirectoryLock, alone: Bool, previousHolderCrashed: Bool = false, changeHub: ChangeHub? = nil,
                     telemetry: Telemetry = .disabled) throws -> (DirectorySharing, BlobCache.OpenReport) {
        var sequence: ChangeSequence?
        let (state, report) = try CacheState.open(
            files: files, io: io, configuration: configuration, limits: limits, alone: alone,
            previousHolderCrashed: previousHolderCrashed, changeHub: changeHub, telemetry: telemetry) {
            let opened = try ChangeSequence.open(files.sequence, root: files.root, io: io, alone: alone)
            opened.store(opened.value | 1)
            sequence = opened
        }
        guard let sequence else { preconditionFailure("CacheState.open returned without calling beforeChanges") }
        return (DirectorySharing(state: state, lock: lock, sequence: sequence), report)
    }

    /// Whether the pending accesses are due for the journal.
    var pendingAccessesDue: Bool {
        guard !pendingAccesses.isEmpty else { return false }
        if pendingAccesses.count >= Self.accessBatchLimit { return true }
        let (elapsed, overflow) = state.now().subtractingReportingOverflow(pendingSince)
        return overflow || elapsed >= state.accessInterval
    }

    /// Whether no other open committed anything since this one last caught up: one atomic load.
    var isCurrent: Bool { sequence.value == appliedSequence }

    /// Whether a read may run without the flock: no accesses due for the journal, and the
    /// index current or brought up to date without it (`catchUpWithoutLock`).
    var mayReadWithoutFlock: Bool { !pendingAccessesDue && (isCurrent || catchUpWithoutLock()) }

    /// Keeps an access a read without the flock made due, for the next operation under it.
    func deferAccess(key: String, time: Int64) {
        if pendingAccesses.isEmpty { pendingSince = time }
        pendingAccesses[ExactKey(key)] = time
    }

    /// Restores a deferred index (`CacheState+DeferredRestore`), keeping the accesses of the
    /// reads made before it for the journal.
    func finishRestoring() throws {
        try state.finishRestoring()
        takeReadsDueForJournal()
    }

    /// Keeps the accesses of reads made before a restore for the journal (a restore the index's
    /// backstop made leaves them too: `CacheState.restoreNow`).
    private func takeReadsDueForJournal() {
        for (key, time) in state.readsDueForJournal { deferAccess(key: key, time: time) }
        state.readsDueForJournal.removeAll()
    }

    /// Brings the index up to date without the flock when other opens only appended records:
    /// replays the records after this open's end up to the journal's committed end (published
    /// in `DIR/sequence` by every writer before it lets the flock go; bytes past it are a
    /// write in progress, or one that failed and will be cut). Returns whether a read may go
    /// on: every operation acknowledged before the call is in the index. The index counts as
    /// current (`isCurrent`) only when no writer was inside meanwhile: the sequence even and
    /// unchanged from before the replay to after it, as a seqlock reader checks. `false` sends
    /// the read to the flock: a rewritten journal, damage, a failed read.
    func catchUpWithoutLock() -> Bool {
        let seen = sequence.value
        let committed = Int64(clamping: sequence.committedEnd)
        let journal = state.journal
        // Loaded before the `fstat`: a journal rewritten since has no link left by then.
        guard let status = try? state.io.system.status(journal.descriptor), status.st_nlink > 0 else { return false }
        let end = min(committed, Int64(status.st_size))
        // Behind this open's own end (not the journal it knows), or more than a read's worth
        // (which would be mapped, and a cut under a mapping faults): the flock sorts it out.
        guard end >= journal.size, end - journal.size <= Int64(MappedFile.readLimit) else { return false }
        if end > journal.size {
            // Committed records end cleanly; anything else is damage, for the flock's catch-up.
            guard (try? state.replayAppended(upTo: end, cutTail: false)) == .clean else { return false }
        }
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if seen & 1 == 0, end == committed, sequence.value == seen { appliedSequence = seen }
        return true
    }

    /// Runs `body` holding the flock, caught up with other opens first. The sequence is odd
    /// while it runs (a read elsewhere then takes the flock and waits; a writer that dies
    /// inside leaves it odd) and ends 2 higher when the journal or the store changed, or the
    /// catch-up cut the journal, so every other open catches up at its next operation. Pending
    /// records are written before the flock goes: none may outlive it (another open appends next).
    /// `keepingDeferredRestore`: a deferred restore (`pendingRestore`) stays deferred when no
    /// other open changed anything (the catch-up then needs no index), for a `body` that does
    /// not use the index; otherwise it is finished first, before the catch-up.
    func underFlock<T>(keepingDeferredRestore: Bool = false, _ body: (CacheWriter) throws -> T) throws -> T {
        try lock.hold()
        defer { lock.release() }
        let sequenceMoved = sequence.value != checkedSequence
        if state.pendingRestore != nil, !keepingDeferredRestore || sequenceMoved { try finishRestoring() }
        // Unmoved since this open's last operation under the flock: nobody wrote, nothing to take in.
        let cut = sequenceMoved ? try catchUp() : false
        let journal = state.journal, store = state.store
        let before = (file: ObjectIdentifier(journal.file), size: journal.size)
        sequence.store(appliedSequence + 1)
        let storeChanges = store.changes
        let failedBefore = journal.failure != nil
        defer {
            let journal = state.journal
            let failed = journal.failure != nil
            let changed = cut || ObjectIdentifier(journal.file) != before.file || journal.size != before.size
                || store.changes != storeChanges || failed != failedBefore
            if changed { appliedSequence += 2 }
            // The journal's size counts only records whose writes succeeded (a failed write is
            // cut back): what reads without the flock may replay.
            if !failed { sequence.publish(committedEnd: journal.size) }
            sequence.store(appliedSequence)
            checkedSequence = failed ? nil : appliedSequence
        }
        let writer = CacheWriter(state)
        if !state.readsDueForJournal.isEmpty { takeReadsDueForJournal() }
        if !pendingAccesses.isEmpty { writePendingAccesses() }
        // (Kept for the next operation if it fails: this one goes on.)
        if state.pendingOpenChecks { try? writer.commit { try state.finishOpenChecks() } }
        let result = Result { try body(writer) }
        if state.journal.hasPending && state.journal.failure == nil { try state.journal.flush() }
        return try result.get()
    }

    /// Brings the index up to date with the journal: replays the records appended since this
    /// open's end, or reloads a journal another open rewrote. Called holding the flock, before
    /// anything is written, unless the sequence still holds the value this open left at its
    /// last operation under the flock (`checkedSequence`: nothing changed since, as every
    /// writer moves it and a killed one leaves it odd). The journal and the active segment are
    /// checked with `fstat` (a catch-up without the flock does not check the active segment),
    /// so appends always go at the files' true ends.
    /// Returns whether it cut the journal (a dead writer's tail, or damage found reloading):
    /// a change other opens must see, whatever the operation then does.
    private func catchUp() throws -> Bool {
        let value = sequence.value
        checkedSequence = nil
        let journal = state.journal
        let status: stat
        do throws(Errno) { status = try state.io.system.status(journal.descriptor) } catch {
            throw BlobCacheError.io(operation: "fstat", path: journal.path.string, errno: error)
        }
        var cut = false
        if status.st_nlink == 0 || Int64(status.st_size) < journal.size {
            cut = try state.reload()
        } else if Int64(status.st_size) > journal.size {
            cut = try state.replayAppended(upTo: Int64(status.st_size), cutTail: true) == .cut
        }
        try state.store.refreshActive()
        // Odd: a writer died inside an operation; what it left is taken in now.
        let even = (value + 1) & ~1
        if even != value { sequence.store(even) }
        appliedSequence = even
        return cut
    }

    /// Journals the accesses reads without the flock left pending, oldest first, each only
    /// when no newer access (by another open) is known. The entries stay where the reads put
    /// them (one whose access a reload lost is used again now). Called holding the flock.
    private func writePendingAccesses() {
        let accesses = pendingAccesses.sorted { $0.value < $1.value }
        pendingAccesses.removeAll()
        for (exact, time) in accesses { state.journalAccess(key: exact.key, time: time) }
    }

    #if BLOBCACHE_TESTING
    /// How many accesses wait for the next operation under the flock: for tests.
    var pendingAccessCount: Int { pendingAccesses.count }
    #endif
}
