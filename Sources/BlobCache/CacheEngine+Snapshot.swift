import SystemPackage

extension CacheEngine {
    static func snapshotPath(in directory: FilePath) -> FilePath { directory.appending(IndexSnapshot.fileName) }

    /// The index restored from `DIR/index` when it reflects a prefix of the journal whose salt
    /// is `journalSalt` and size `journalSize`; otherwise `nil`, and a snapshot that cannot be
    /// used is deleted (so that a journal growing past it later cannot make it look current).
    static func restoreSnapshot(in directory: FilePath, journalSalt: UInt64, journalSize: Int64)
        throws -> (index: CacheIndex, header: IndexSnapshot.Header)? {
        let path = snapshotPath(in: directory)
        let mapped: MappedFile?
        do {
            mapped = try MappedFile(path)
        } catch {
            return nil   // unreadable now (say, out of address space): replay, keep the file
        }
        guard let file = mapped else {
            if FileIO.status(path) != nil { _ = try FileIO.remove(path) }   // empty
            return nil
        }
        let restored = { () -> (CacheIndex, IndexSnapshot.Header)? in
            guard case .success(let header) = IndexSnapshot.parseHeader(file.bytes),
                  header.journalSalt == journalSalt,
                  header.journalLength >= Int64(JournalFormat.headerSize), header.journalLength <= journalSize,
                  let index = IndexSnapshot.restore(file, header: header) else { return nil }
            return (index, header)
        }()
        if restored == nil { _ = try FileIO.remove(path) }
        return restored
    }

    /// Writes `DIR/index` for the journal as it stands (flushed), when the journal has grown
    /// by `snapshotThreshold` (64 KiB by default: replaying that takes well under a
    /// millisecond, writing the snapshot of a large cache several) since the last one.
    /// Best effort: the snapshot only saves time at the next open, so failing to write it
    /// loses nothing.
    func writeSnapshotIfWorthIt() {
        let covered = snapshotCoverage ?? Int64(JournalFormat.headerSize)
        guard journal.failure == nil, journal.size - covered >= snapshotThreshold else { return }
        let image = IndexSnapshot.encode(index, journalSalt: journal.header.salt, journalLength: journal.size,
                                         journalRecords: journal.recordCount)
        let path = Self.snapshotPath(in: directory)
        let temporary = FilePath(path.string + ".tmp")
        do {
            let fd = try FileIO.open(temporary, .readWrite, options: [.create, .truncate],
                                     permissions: [.ownerReadWrite, .groupRead, .otherRead])
            defer { try? fd.close() }
            try image.withUnsafeBytes { try FileIO.writeAll(fd, $0, at: 0, path: temporary) }
            try FileIO.rename(temporary, to: path)
            snapshotCoverage = journal.size
        } catch {
            _ = try? FileIO.remove(temporary)
        }
    }

    /// Deletes the snapshot (the journal was rewritten, so it no longer matches).
    func deleteSnapshot() throws {
        guard snapshotCoverage != nil || FileIO.status(Self.snapshotPath(in: directory)) != nil else { return }
        _ = try FileIO.remove(Self.snapshotPath(in: directory))
        snapshotCoverage = nil
    }
}
