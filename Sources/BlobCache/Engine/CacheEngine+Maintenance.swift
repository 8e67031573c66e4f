import SystemPackage

extension CacheEngine {
    // MARK: Journal compaction

    /// Records in the journal that no longer describe a live entry.
    var redundantRecords: Int { max(0, journal.recordCount - index.entryCount) }

    /// About the bytes a rewritten journal takes: one `set` record per live entry.
    var compactedJournalBytes: Int {
        JournalFormat.headerSize + index.entryCount * Self.setRecordOverhead + index.liveKeyBytes
    }

    /// A `set` record's bytes besides its key (frame, blob, times, flags), rounded up.
    static let setRecordOverhead = 96

    /// Journal bytes beyond twice a compacted journal that are tolerated before a rewrite
    /// (which costs two fsyncs): 1 MiB, or an eighth of a smaller byte cap (at least 16 KiB),
    /// so that a small cache's directory stays close to its cap (docs/RELIABILITY.md).
    var journalSlack: Int { Self.allowance(cap: limits.maxStoredBytes, fraction: 8) }

    /// `min(1 MiB, max(16 KiB, cap / fraction))`; 1 MiB without a cap.
    static func allowance(cap: Int?, fraction: Int) -> Int {
        guard let cap else { return 1 << 20 }
        return min(1 << 20, max(16 << 10, cap / fraction))
    }

    /// Rewrites the journal when it is more than twice its compacted size plus the slack. A
    /// process that only reads adds an access record per entry per `accessJournalInterval` at
    /// most, so its journal stays within that bound too.
    func compactJournalIfRedundant() throws {
        guard journal.size > max(Int64(2 * compactedJournalBytes + journalSlack), journalCompactionBackoff) else { return }
        do {
            try compactJournal()
            journalCompactionBackoff = 0
        } catch {
            journalCompactionBackoff = journal.size + Int64(journalSlack)
            throw error
        }
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
    func removeExpired() -> Int {
        let time = now()
        let expired = index.slots { $0.expiry <= time }
        for slot in expired { remove(slot: slot, reason: .expired) }
        return expired.count
    }

    /// Removes every entry (pinned ones only when asked).
    func removeAll(includingPinned: Bool) {
        index.removeAll(includingPinned: includingPinned).forEach(release)
        journal.append(.removeAll(includingPinned: includingPinned))
    }

    // MARK: Pack garbage collection

    /// Dead bytes in pack segments: space taken by records no entry refers to.
    var deadPackBytes: Int {
        let written = store.segmentSizes.values.reduce(0) { $0 + Int($1) - PackFormat.segmentHeaderSize }
        return max(0, written - index.livePackedBytes)
    }

    /// Dead pack bytes tolerated: an eighth of the live packed bytes, at least
    /// `min(1 MiB, max(16 KiB, cap / 16))`.
    var packGarbageAllowance: Int {
        max(Self.allowance(cap: limits.maxStoredBytes, fraction: 16), index.livePackedBytes / 8)
    }

    /// Collects when dead pack bytes pass the allowance, down to half of it (or as far as
    /// segments a tenth dead allow), most dead segments first; so a single operation copies
    /// no more than it must.
    func collectPackGarbageIfWorthIt() throws {
        let allowance = packGarbageAllowance
        guard deadPackBytes > max(allowance, packCollectionBackoff) else { return }
        do {
            try collectPackGarbageNow(allowance: allowance)
            packCollectionBackoff = 0
        } catch {
            packCollectionBackoff = deadPackBytes + allowance / 2
            throw error
        }
    }

    private func collectPackGarbageNow(allowance: Int) throws {
        // The newest segment takes appends and is never collected: close it when it holds
        // its share of the dead bytes, so that they can be collected.
        if let newest = store.activeSegmentNumber, deadFraction(ofSegment: newest) >= Self.victimFraction {
            try store.startSegment()
        }
        try collectPackGarbage(minimumDeadFraction: Self.victimFraction, downTo: allowance / 2)
    }

    /// The share of dead bytes a closed segment must hold to be collected by the automatic GC.
    static let victimFraction = 0.1

    private func deadFraction(ofSegment number: UInt32) -> Double {
        let payload = Int(store.segmentSizes[number] ?? 0) - PackFormat.segmentHeaderSize
        guard payload > 0 else { return 1 }
        return Double(payload - index.liveBytes(inSegment: number)) / Double(payload)
    }

    /// Copies the live records of closed segments at least `minimumDeadFraction` dead (most
    /// dead first, until dead bytes are at most `target`) into the newest segment, journals
    /// their new places and deletes the old segments. The deletions are queued: they happen
    /// once the copies and the journal are fsynced (`commitRecords`), so a crash or power loss
    /// at any point leaves every live record somewhere the journal can find it.
    @discardableResult
    func collectPackGarbage(minimumDeadFraction: Double, downTo target: Int = 0) throws -> (segments: Int, bytesFreed: Int) {
        let active = store.activeSegmentNumber
        let candidates = store.segmentSizes.keys
            .filter { $0 != active && deadFraction(ofSegment: $0) >= minimumDeadFraction }
            .sorted { (deadFraction(ofSegment: $0), $1) > (deadFraction(ofSegment: $1), $0) }
        guard !candidates.isEmpty else { return (0, 0) }
        var victims: [UInt32] = []
        var dead = deadPackBytes
        for number in candidates where dead > target || victims.isEmpty {
            victims.append(number)
            let payload = Int(store.segmentSizes[number] ?? 0) - PackFormat.segmentHeaderSize
            dead -= payload - index.liveBytes(inSegment: number)
        }
        let freed = try evacuate(segments: victims)
        counters.packCollections += 1
        return (victims.count, freed)
    }

    /// Copies the live records of `segments` into the newest segment (started anew if it is
    /// one of them), journals their new places, and deletes the segments once the copies and
    /// the journal are fsynced. Returns the bytes the segments took.
    @discardableResult
    func evacuate(segments victims: [UInt32]) throws -> Int {
        guard !victims.isEmpty else { return 0 }
        if let active = store.activeSegmentNumber, victims.contains(active) { try store.startSegment() }
        let victimSet = Set(victims)
        var moving: [UInt32: [BlobInfo]] = [:]
        for (_, blob) in index.storedBlobs {
            if case .packed(let segment, _) = blob.info.place, victimSet.contains(segment) {
                moving[segment, default: []].append(blob.info)
            }
        }
        var freed = 0
        for number in victims.sorted() {
            freed += Int(store.segmentSizes[number] ?? 0)
            guard let segment = store.segments[number] else { continue }
            for info in (moving[number] ?? []).sorted(by: { Self.offset($0) < Self.offset($1) }) {
                guard case .packed(_, let offset) = info.place else { continue }
                let image = try io.read(segment.descriptor, count: info.footprint, at: Int64(offset), path: segment.path)
                guard image.count == info.footprint else {
                    // The record was cut short (a power cut in .processCrashSafe mode): copying
                    // it would misplace every record after it. Its entries go, as a read would drop them.
                    for slot in index.liveSlots where index.blob(ofEntry: slot).id == info.id { remove(slot: slot, reason: .repair) }
                    continue
                }
                var moved = info
                moved.place = try image.withUnsafeBytes { try store.appendRecord($0) }
                index.relocate(moved)
                journal.append(.relocate(moved))
            }
            dispose(.segment(number), destroysDurableData: true)
        }
        try commitRecords()
        return freed
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
