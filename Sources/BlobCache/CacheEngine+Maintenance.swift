import SystemPackage

extension CacheEngine {
    // MARK: Journal compaction

    /// Records in the journal that no longer describe a live entry.
    var redundantRecords: Int { max(0, journal.recordCount - index.entryCount) }

    /// The fewest redundant records worth a rewrite (which costs two fsyncs): at a cap of a
    /// few thousand entries every set adds a `set` and an eviction's `remove`, so a floor of
    /// 2,000 rewrote the journal every 1,000 sets (a visible share of `put 4 KiB at the cap`
    /// in perf); 8,192 (about 1 MiB of journal) makes that four times rarer.
    static let compactionFloor = 8192

    /// Rewrites the journal when redundant records reach max(8192, live entries).
    func compactJournalIfRedundant() throws {
        if redundantRecords >= max(Self.compactionFloor, index.entryCount) { try compactJournal() }
    }

    /// Rewrites the journal to one `set` record per live entry, in LRU order (docs/FORMAT.md).
    func compactJournal() throws {
        try journal.flush()
        let order = index.journalOrder()
        let records = order.map { JournalRecord.set(index.record(at: $0)) }
        try journal.rewrite(with: records, created: now())
        try deleteSnapshot()
        for slot in order { index.markJournaled(slot: slot) }
        counters.journalCompactions += 1
    }

    // MARK: Expiry

    /// Removes every entry whose expiry has passed; returns how many.
    @discardableResult
    func removeExpired() throws -> Int {
        let time = now()
        let expired = index.slots { $0.expiry <= time }
        for slot in expired { try remove(slot: slot, reason: .expired) }
        try journal.flush()
        return expired.count
    }

    /// Removes every entry (pinned ones only when asked).
    func removeAll(includingPinned: Bool) throws {
        let released = index.removeAll(includingPinned: includingPinned)
        released.forEach(dispose)
        journal.append(.removeAll(includingPinned: includingPinned))
        try journal.flush()
        try collectPackGarbageIfWorthIt()
        try compactJournalIfRedundant()
    }

    // MARK: Pack garbage collection

    /// Dead bytes in pack segments: space taken by records no entry refers to.
    var deadPackBytes: Int {
        let written = store.segmentSizes.values.reduce(0) { $0 + Int($1) - PackFormat.segmentHeaderSize }
        return max(0, written - index.livePackedBytes)
    }

    /// Collects when dead pack bytes exceed max(1 MiB, a quarter of the live packed bytes).
    func collectPackGarbageIfWorthIt() throws {
        if deadPackBytes > max(1 << 20, index.livePackedBytes / 4) { try collectPackGarbage(minimumDeadFraction: 0.25) }
    }

    /// Copies the live records of every closed segment that is at least `minimumDeadFraction`
    /// dead into the newest segment, journals their new places, and deletes those segments.
    /// Safe at any kill point: a segment is deleted only after the journal (fsynced) and the
    /// copies (fsynced) say where its live records went.
    @discardableResult
    func collectPackGarbage(minimumDeadFraction: Double) throws -> (segments: Int, bytesFreed: Int) {
        let active = store.activeSegmentNumber
        var victims: [UInt32] = []
        for (number, size) in store.segmentSizes where number != active {
            let live = index.liveBytes(inSegment: number)
            let payload = Int(size) - PackFormat.segmentHeaderSize
            if payload <= 0 || Double(payload - live) >= minimumDeadFraction * Double(payload) { victims.append(number) }
        }
        guard !victims.isEmpty else { return (0, 0) }
        victims.sort()
        let victimSet = Set(victims)
        var moving: [UInt32: [BlobInfo]] = [:]
        for (_, blob) in index.storedBlobs {
            if case .packed(let segment, _) = blob.info.place, victimSet.contains(segment) {
                moving[segment, default: []].append(blob.info)
            }
        }
        var freed = 0, movedRecords = 0
        for number in victims {
            freed += Int(store.segmentSizes[number] ?? 0)
            for info in (moving[number] ?? []).sorted(by: { Self.offset($0) < Self.offset($1) }) {
                guard case .packed(_, let offset) = info.place, let segment = store.segments[number] else { continue }
                let image = try FileIO.read(segment.descriptor, count: info.footprint, at: Int64(offset), path: segment.path)
                var moved = info
                moved.place = try image.withUnsafeBytes { try store.appendRecord($0) }
                index.relocate(moved)
                journal.append(.relocate(moved))
                movedRecords += 1
            }
        }
        // One flush and one fsync pair for the whole run: only then may the old segments go.
        // Segments with nothing live (the usual case under LRU eviction, which frees the
        // oldest records first) need neither: no entry points into them any more.
        try journal.flush()
        if movedRecords > 0 {
            try store.syncAll()
            try journal.sync()
        }
        for number in victims { try store.deleteSegment(number) }
        counters.packCollections += 1
        return (victims.count, freed)
    }

    private static func offset(_ info: BlobInfo) -> UInt64 {
        if case .packed(_, let offset) = info.place { return offset }
        return 0
    }

    // MARK: Close

    /// Writes what the journal does not yet know of recency, so a clean close keeps LRU order
    /// exactly: access records for every entry from the first one that moved unjournaled to the
    /// most recent (and for pinned entries whose access time is newer than the journal's).
    func persistRecency() throws {
        var writing = false
        var cursor = index.oldest
        while cursor >= 0 {
            let entry = index.entry(at: cursor)
            if !entry.orderJournaled || entry.access != entry.journaledAccess { writing = true }
            if writing {
                journal.append(.access(key: index.key(at: cursor), time: entry.access))
                index.markJournaled(slot: cursor)
            }
            cursor = entry.newer
        }
        for slot in index.slots(where: { $0.pinned && $0.access != $0.journaledAccess }) {
            journal.append(.access(key: index.key(at: slot), time: index.entry(at: slot).access))
            index.markJournaled(slot: slot)
        }
        try journal.flush()
    }
}
