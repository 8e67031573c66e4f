import SystemPackage

/// Taking in what other opens of the directory wrote: records they appended, or a journal one
/// of them rewrote. The state does not know who wrote them; `DirectorySharing` calls these
/// when the change sequence says something changed.
extension CacheState {
    /// How a replay of appended records ended.
    enum AppendedReplay: Equatable {
        /// Every record up to the end was applied.
        case clean
        /// The records stopped early and the rest was left alone (no flock: for the next open that holds it).
        case stoppedEarly
        /// The records stopped early and the journal was cut there (under the flock), or
        /// reloaded whole and cut at the end of what it holds.
        case cut
    }

    /// Replays the records other opens appended, from this journal's end to `end`, and says
    /// how they ended. A torn or damaged tail is cut when `cutTail` (the flock is
    /// held, so no live writer is inside: one died mid-write), as an open cuts it; without the
    /// flock it is left for the next open that holds it, and this journal ends before it.
    @discardableResult
    func replayAppended(upTo end: Int64, cutTail: Bool) throws -> AppendedReplay {
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
            return try reload() ? .cut : .stoppedEarly
        case .tornTail(let offset), .corrupt(let offset, _):
            validEnd = Int64(offset)
            if cutTail {
                try io.truncate(journal.descriptor, to: validEnd, path: journal.path)
            }
        }
        journal.adoptAppended(upTo: validEnd, count: walk.records)
        for (number, recordEnd) in reached {
            store.dropIfReplaced(number)
            store.learn(segment: number, end: recordEnd)
        }
        for number in relocatedFrom where index.liveBytes(inSegment: number) == 0 { store.closeIfRetired(number) }
        if validEnd == end { return .clean }
        return cutTail ? .cut : .stoppedEarly
    }

    /// Loads the journal another open put in place of this one (a rewrite): from the snapshot
    /// when it matches, plus the records after it. Returns whether it cut the journal's tail
    /// (a dead writer's, or damage).
    @discardableResult
    func reload() throws -> Bool {
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
        var fresh = CacheIndex(segmented: segmented)
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
        }
        keep = true
        journal = JournalFile(path: path, io: io, descriptor: fd, header: header, size: size,
                              recordCount: prior + walk.records, synchronous: journal.synchronous, cipher: journal.cipher)
        if recordsChanges { noteDifferences(from: index, to: fresh) }
        fresh.useSegments(segmented)
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
        return size != fileSize
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

    /// Journals an access a read made without the flock, unless a newer one (by another open)
    /// is known. The entry stays where the read put it (one whose access a reload lost is used
    /// again now). Called holding the flock.
    func journalAccess(key: String, time: Int64) {
        guard let slot = index.slot(of: key) else { return }
        let access = index.entry(at: slot).access
        if access > time { return }
        if access < time { index.touch(slot: slot, at: time, journaled: false) }
        index.markAccessJournaled(slot: slot, at: time)
        journal.append(.access(key: key, time: time))
    }

    /// Adds this open's counts to those saved in `DIR/stats` by every open before it (under
    /// the flock, so that no open's counts are lost).
    func saveCounters() throws {
        try (BlobCache.Counters.saved(in: files, io: io) + counters).save(in: files, io: io)
    }
}
