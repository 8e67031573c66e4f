import SystemPackage

extension CacheEngine {
    /// `DIR/index` mapped, when its header says it reflects a prefix of the journal whose salt
    /// is `journalSalt` and size `journalSize`; otherwise `nil`, and a snapshot that cannot be
    /// used is deleted (so that a journal growing past it later cannot make it look current).
    /// `cipher`: the snapshot is sealed (encryption). `prefault`: whether its pages are read in
    /// at once (for a restore now), given the header.
    static func mapSnapshot(files: CacheFiles, io: FileIO, journalSalt: UInt64, journalSize: Int64, cipher: CacheCipher?,
                            prefault: (IndexSnapshot.Header) -> Bool) throws -> (file: MappedFile, header: IndexSnapshot.Header)? {
        let path = files.snapshot
        let opened: Result<(file: MappedFile, header: IndexSnapshot.Header), BlobDamage>?
        do {
            opened = try IndexSnapshot.map(path, io: io, journalSize: journalSize, cipher: cipher, prefault: prefault)
        } catch {
            return nil   // unreadable now (say, out of address space): replay, keep the file
        }
        guard let opened else { return nil }
        guard case .success(let (file, header)) = opened, header.journalSalt == journalSalt,
              header.journalLength >= Int64(JournalFormat.headerSize), header.journalLength <= journalSize else {
            _ = try io.remove(path)
            return nil
        }
        return (file, header)
    }

    /// `mapSnapshot` then `restoreSnapshot`: the index `DIR/index` holds, restored now.
    static func restoreSnapshot(files: CacheFiles, io: FileIO, journalSalt: UInt64, journalSize: Int64, cipher: CacheCipher?)
        throws -> (index: CacheIndex, header: IndexSnapshot.Header)? {
        guard let snapshot = try mapSnapshot(files: files, io: io, journalSalt: journalSalt, journalSize: journalSize,
                                             cipher: cipher, prefault: { _ in true }),
              let index = try restoreSnapshot(snapshot, files: files, io: io) else { return nil }
        return (index, snapshot.header)
    }

    /// The index a mapped snapshot holds (`IndexSnapshot.restore`); `nil` when it fails its
    /// checks, and then the file is deleted.
    static func restoreSnapshot(_ snapshot: (file: MappedFile, header: IndexSnapshot.Header), files: CacheFiles,
                                io: FileIO) throws -> CacheIndex? {
        guard let index = IndexSnapshot.restore(snapshot.file, header: snapshot.header) else {
            _ = try io.remove(files.snapshot)
            return nil
        }
        return index
    }

    /// Writes `DIR/index` for the journal as it stands (flushed), when the journal has grown
    /// by `snapshotThreshold` (64 KiB by default: replaying that takes well under a
    /// millisecond, writing the snapshot of a large cache several) since the last one.
    /// Best effort: the snapshot only saves time at the next open, so failing to write it
    /// loses nothing. The caller has fsynced the journal (a clean close).
    func writeSnapshotIfWorthIt() {
        // Not while the restore is deferred: the snapshot and the short journal after it stand.
        guard pendingRestore == nil, journal.failure == nil, journalPastSnapshot >= snapshotThreshold else { return }
        let checkpoint = Checkpoint(of: self)
        finishCheckpoint(checkpoint, written: (try? checkpoint.write()) != nil)
    }

    /// Journal bytes after the part the snapshot on disk reflects (the whole journal without one).
    var journalPastSnapshot: Int64 { journal.size - (snapshotCoverage ?? Int64(JournalFormat.headerSize)) }

    // MARK: Checkpoints

    /// Journal growth past the snapshot after which maintenance writes a new one while the
    /// cache is in use (a checkpoint), so that the first open after a crash restores it and
    /// replays only what came after: half a compacted journal (about one record for every two
    /// live entries), and at least `checkpointMinimum` (16 MiB by default, some 150,000
    /// records: 40 ms of replay). A checkpoint costs about as much as restoring the snapshot
    /// it writes, so writing one per half a compacted journal of growth costs each record
    /// about twice its own replay, and bounds a crash's replay to half the entries.
    var checkpointThreshold: Int64 { max(checkpointMinimum, Int64(compactedJournalBytes / 2)) }

    /// Whether a checkpoint is due (see `checkpointThreshold`; not again after a failed one
    /// until the journal has grown by the threshold once more).
    var checkpointIsDue: Bool {
        pendingRestore == nil && journalPastSnapshot >= checkpointThreshold && journal.size >= checkpointBackoff
    }

    /// A snapshot of the index as it stands, taken under the lock and written outside it.
    ///
    /// `@unchecked Sendable`: `index` is a copy-on-write copy that nothing writes (the engine's
    /// next change copies the arrays it touches first), as in `JournalRewrite`.
    struct Checkpoint: @unchecked Sendable {
        let index: CacheIndex
        let journalSalt: UInt64
        /// The journal's size and records when the copy was taken: what the snapshot reflects.
        let journalLength: Int64
        let journalRecords: Int
        let cipher: CacheCipher?
        let path: CachePath
        let io: FileIO

        /// The engine's index and journal as they stand (the journal flushed: its size counts
        /// every record the index holds).
        init(of engine: CacheEngine) {
            index = engine.index
            journalSalt = engine.journal.header.salt
            journalLength = engine.journal.size
            journalRecords = engine.journal.recordCount
            cipher = engine.journal.cipher
            path = engine.files.snapshot
            io = engine.io
        }

        /// Encodes (and seals) the snapshot and puts it in place of `DIR/index`.
        func write() throws {
            let plain = IndexSnapshot.encode(index, journalSalt: journalSalt, journalLength: journalLength,
                                             journalRecords: journalRecords)
            let image = cipher.map { IndexSnapshot.seal(plain, cipher: $0) } ?? plain
            _ = try image.withUnsafeBytes { try io.replaceAtomically(path, with: $0, durable: false) }
        }
    }

    /// Takes a checkpoint of the index. First, as a clean close does, journals the recency
    /// the journal lacks (so that the snapshot is exactly what replaying the journal up to its
    /// length gives: fsck compares them) and fsyncs the journal (so that the snapshot never
    /// reflects records a power loss could take from the journal under it).
    func beginCheckpoint() throws -> Checkpoint {
        try persistRecency()
        try journal.sync()
        return Checkpoint(of: self)
    }

    /// Notes a checkpoint written (the snapshot now reflects its part of the journal, unless
    /// the journal was replaced meanwhile) or one that failed (not tried again until the
    /// journal has grown by the threshold).
    func finishCheckpoint(_ checkpoint: Checkpoint, written: Bool) {
        guard written else {
            checkpointBackoff = journal.size + checkpointThreshold
            return
        }
        guard journal.header.salt == checkpoint.journalSalt else { return }
        snapshotCoverage = checkpoint.journalLength   // what `DIR/index` now reflects
        checkpointBackoff = 0
    }

    /// Deletes the snapshot (the journal was rewritten, so it no longer matches).
    func deleteSnapshot() throws {
        guard snapshotCoverage != nil || io.status(files.snapshot) != nil else { return }
        _ = try io.remove(files.snapshot)
        snapshotCoverage = nil
    }
}
