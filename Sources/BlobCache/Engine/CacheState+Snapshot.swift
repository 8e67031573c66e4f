import SystemPackage

extension CacheState {
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

    /// Deletes the snapshot (the journal was rewritten, so it no longer matches).
    func deleteSnapshot() throws {
        guard snapshotCoverage != nil || io.status(files.snapshot) != nil else { return }
        _ = try io.remove(files.snapshot)
        snapshotCoverage = nil
    }
}
