import SystemPackage

/// Checkpoints: the index snapshot (`DIR/index`) written by maintenance while the cache is in
/// use, so that the first open after a crash restores it and replays only the journal after it.
extension CacheState {
    /// Journal growth past the snapshot after which a checkpoint is due: half a compacted
    /// journal (about one record for every two live entries), and at least `checkpointMinimum`
    /// (16 MiB by default, some 150,000 records). A growing cache's checkpoints then come each
    /// time it doubles, so each entry is encoded about twice in all (about 0.9 µs a set at
    /// 1 M entries here), and a crash replays at most about half the entries' records.
    var checkpointThreshold: Int64 { max(checkpointMinimum, Int64(compactedJournalBytes / 2)) }

    /// Whether a checkpoint is due: the journal `checkpointThreshold` past the snapshot, no
    /// journal rewrite within half that (the rewrite deletes the snapshot, and the checkpoint
    /// after it would replace this one), and not backing off from a failed one.
    var checkpointIsDue: Bool {
        guard pendingRestore == nil, journalPastSnapshot >= checkpointThreshold,
              journal.size + checkpointThreshold / 2 <= journalRewriteThreshold else { return false }
        guard let backoff = checkpointBackoff, backoff.salt == journal.header.salt else { return true }
        return journal.size >= backoff.size
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
        /// The journal, to fsync before the snapshot is written (outside the lock).
        let journalFile: OpenFile
        let cipher: CacheCipher?
        let path: CachePath
        let io: FileIO

        /// The engine's index and journal as they stand (the journal flushed: its size counts
        /// every record the index holds).
        init(of engine: CacheState) {
            index = engine.index
            journalSalt = engine.journal.header.salt
            journalLength = engine.journal.size
            journalRecords = engine.journal.recordCount
            journalFile = engine.journal.file
            cipher = engine.journal.cipher
            path = engine.files.snapshot
            io = engine.io
        }

        /// Encodes (and seals) the snapshot and puts it in place of `DIR/index`; returns the
        /// file's first page (`remove(ifItBegins:)`).
        @discardableResult
        func write() throws -> [UInt8] {
            let plain = IndexSnapshot.encode(index, journalSalt: journalSalt, journalLength: journalLength,
                                             journalRecords: journalRecords)
            let image = cipher.map { IndexSnapshot.seal(plain, cipher: $0) } ?? plain
            _ = try image.withUnsafeBytes { try io.replaceAtomically(path, with: $0, durable: false) }
            return Array(image.prefix(IndexSnapshot.page))
        }

        /// Deletes the snapshot `write` put in place, if no other open replaced it since.
        func remove(ifItBegins firstPage: [UInt8]) {
            IndexSnapshot.remove(path, io: io, ifItBegins: firstPage)
        }
    }

    /// Takes a checkpoint of the index when one is due (or whenever, `onlyIfDue` false), after
    /// taking in the coverage of a snapshot another open wrote (so that opens sharing the
    /// directory do not each write one for the same growth). First, as a clean close does,
    /// journals the recency the journal lacks, so that the snapshot is exactly what replaying
    /// the journal up to its length gives (fsck compares them). The caller fsyncs the journal
    /// (`Checkpoint.journalFile`) before it writes the snapshot, so that the snapshot never
    /// reflects records a power loss could take from the journal under it. Under the flock.
    func beginCheckpoint(onlyIfDue: Bool = true) throws -> Checkpoint? {
        adoptSnapshotOnDisk()
        guard !onlyIfDue || checkpointIsDue else { return nil }
        try persistRecency()
        return Checkpoint(of: self)
    }

    /// Takes as this open's `snapshotCoverage` that of `DIR/index` when another open wrote it
    /// for this journal and it covers more (its header page, checked, is read; a sealed
    /// snapshot is left alone, as its header cannot be read without opening it whole). Only
    /// the header is trusted here: a snapshot whose body is damaged costs a missed checkpoint,
    /// as the open that finds it replays the whole journal.
    func adoptSnapshotOnDisk() {
        guard journal.cipher == nil, let fd = try? io.openIfExists(files.snapshot) else { return }
        defer { io.close(fd) }
        guard let size = try? io.fileSize(fd, path: files.snapshot),
              let page = try? io.read(fd, count: IndexSnapshot.page, at: 0, path: files.snapshot),
              case .success(let header) = page.withUnsafeBytes({ IndexSnapshot.parseHeader($0, fileSize: Int(size)) }),
              header.journalSalt == journal.header.salt, header.journalLength <= journal.size,
              header.journalLength > snapshotCoverage ?? 0 else { return }
        snapshotCoverage = header.journalLength
    }

    /// Notes a checkpoint written (the snapshot now reflects its part of the journal, unless
    /// the journal was replaced meanwhile) or one that failed (not tried again on this journal
    /// until it has grown by the threshold).
    func finishCheckpoint(_ checkpoint: Checkpoint, written: Bool) {
        guard written else {
            checkpointBackoff = (journal.header.salt, journal.size + checkpointThreshold)
            return
        }
        guard journal.header.salt == checkpoint.journalSalt else { return }
        snapshotCoverage = checkpoint.journalLength   // what `DIR/index` now reflects
        checkpointBackoff = nil
    }
}
