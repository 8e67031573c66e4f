import SystemPackage

extension CacheState {
    // MARK: Pack garbage collection

    /// Dead bytes in pack segments: space taken by records no entry refers to.
    var deadPackBytes: Int {
        let written = store.segmentSizes.values.reduce(0) { $0 + Int($1) - PackFormat.segmentHeaderSize }
        return max(0, written - index.livePackedBytes)
    }

    /// Dead pack bytes tolerated: half the live packed bytes, but never more than an eighth
    /// of the byte cap (which keeps the disk bound), and at least
    /// `min(1 MiB, max(16 KiB, cap / 16))`. Collecting a segment copies its live records, so
    /// the fewer dead bytes are tolerated, the more each freed byte costs to copy: at a
    /// tolerance of half the live bytes a run copies at most about two bytes per byte it
    /// frees, at an eighth (the old rule) up to eight.
    var packGarbageAllowance: Int {
        let cap = limits.maxStoredBytes
        let tolerated = cap.map { min(index.livePackedBytes / 2, $0 / 8) } ?? index.livePackedBytes / 2
        return max(Self.allowance(cap: cap, fraction: 16), tolerated)
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
        let victims = pickVictims(minimumDeadFraction: minimumDeadFraction, downTo: target, room: .max)
        guard !victims.isEmpty else { return (0, 0) }
        let freed = try evacuate(segments: victims)
        counters.packCollections += 1
        return (victims.count, freed)
    }

    /// The closed segments at least `minimumDeadFraction` dead, most dead first, until dead
    /// bytes are at most `target`, or their live records would take more than `room` bytes,
    /// or more than `sources` of them would hold live records (each is open while it is
    /// copied from). The first one is always taken.
    private func pickVictims(minimumDeadFraction: Double, downTo target: Int, room: Int, sources: Int = .max) -> [UInt32] {
        let active = store.activeSegmentNumber
        let candidates = store.segmentSizes.keys
            .filter { $0 != active && deadFraction(ofSegment: $0) >= minimumDeadFraction }
            .sorted { (deadFraction(ofSegment: $0), $1) > (deadFraction(ofSegment: $1), $0) }
        var victims: [UInt32] = []
        var dead = deadPackBytes, moving = 0, withLive = 0
        for number in candidates where dead > target || victims.isEmpty {
            let live = index.liveBytes(inSegment: number)
            if !victims.isEmpty, moving > room - live || (live > 0 && withLive >= sources) { break }
            victims.append(number)
            moving += live
            if live > 0 { withLive += 1 }
            dead -= Int(store.segmentSizes[number] ?? 0) - PackFormat.segmentHeaderSize - live
        }
        return victims
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
            guard let segment = try store.segment(number) else { continue }
            for info in (moving[number] ?? []).sorted(by: { Self.offset($0) < Self.offset($1) }) {
                guard case .packed(_, let offset) = info.place else { continue }
                let fits = Int64(offset) + Int64(info.footprint) <= store.segmentSizes[number] ?? 0
                let image = fits ? try io.read(segment.descriptor, count: info.footprint, at: Int64(offset), path: segment.path) : []
                guard image.count == info.footprint else {
                    // The record was cut short (a power cut in .processCrashSafe mode): copying
                    // it would misplace every record after it. Its entries go, as a read would drop them.
                    for slot in index.liveSlots where index.blob(ofEntry: slot).id == info.id { remove(slot: slot, reason: .damaged) }
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

    // MARK: Collection outside the lock (see `PackCollection`)

    /// Plans a collection of the closed segments at least `minimumDeadFraction` dead, most dead
    /// first, until dead bytes are at most `target` or the live records to move would fill a
    /// segment (one run copies at most one segment's worth; the next operation starts another
    /// if more is due). `nil` when no segment qualifies. Runs under the lock.
    func planPackCollection(minimumDeadFraction: Double, downTo target: Int) throws -> PackCollection? {
        // Other processes may have collected or grown segments: plan from the files as they are.
        try store.rescan()
        var victims = pickVictims(minimumDeadFraction: minimumDeadFraction, downTo: target,
                                  room: Int(store.segmentLimit) - PackFormat.segmentHeaderSize,
                                  sources: BlobStore.openSegmentLimit / 2)
        // When the dead bytes are all in the newest segment, it is collected too: the new
        // segment takes the appends from it once adopted (records appended to it meanwhile
        // keep it until a later run).
        if victims.isEmpty, let newest = store.activeSegmentNumber, deadFraction(ofSegment: newest) >= minimumDeadFraction {
            victims = [newest]
        }
        guard !victims.isEmpty else { return nil }
        var sources: [UInt32: PackSegment] = [:]
        for number in victims where index.liveBytes(inSegment: number) > 0 {
            sources[number] = try store.segment(number)
        }
        var moves: [PackCollection.Move] = []
        index.forEachBlob { blob in
            if case .packed(let number, let offset) = blob.info.place, let source = sources[number] {
                moves.append(.init(info: blob.info, source: source, offset: offset,
                                   sourceEnd: store.segmentSizes[number] ?? 0))
            }
        }
        moves.sort { ($0.source.number, $0.offset) < ($1.source.number, $1.offset) }
        return PackCollection(victims: victims, moves: moves, number: moves.isEmpty ? nil : store.reserveSegmentNumber(),
                              mappedLength: Int(store.segmentLimit), files: files, io: io)
    }

    /// Names the segment a collection copied into (a fresh number, its header rewritten and
    /// fsynced, when another process started a segment of the reserved one meanwhile), fsyncs
    /// `packs/`, takes the segment in and journals the new place of every record still where
    /// it was copied from (others were removed or moved meanwhile: their copies are dead
    /// bytes). Returns the journal file to fsync before `finish`. Runs under the lock, as an
    /// operation of its own (`perform`): relocations need no fsync yet. On failure nothing is
    /// left of the copy.
    func adopt(_ copy: PackCollection.Copy?) throws -> OpenFile {
        guard let copy else { return journal.file }
        var number = copy.number
        var path = files.segmentPath(number)
        do {
            if store.segmentSizes[number] != nil || io.status(path) != nil {
                store.releaseReservation(number)
                number = store.reserveSegmentNumber()
                path = files.segmentPath(number)
                try PackFormat.segmentHeader(number: number).withUnsafeBytes {
                    try io.writeAll(copy.descriptor, $0, at: 0, path: copy.staging)
                }
                try io.sync(copy.descriptor, path: copy.staging)
            }
            try io.rename(copy.staging, to: path)
        } catch {
            copy.discard(io: io)
            store.releaseReservation(number)
            throw error
        }
        let segment = PackSegment(number: number, path: path, descriptor: copy.descriptor, mappedLength: copy.mappedLength, io: io)
        do { try io.syncDirectory(files.packs) } catch {
            _ = try? io.remove(path)
            store.releaseReservation(number)
            throw error
        }
        store.adoptSegment(segment, end: copy.end)
        for (info, offset) in copy.placed {
            guard let blob = index.blob(info.id), blob.info.place == info.place else { continue }
            var moved = blob.info
            moved.place = .packed(segment: number, offset: offset)
            index.relocate(moved)
            journal.append(.relocate(moved))
        }
        for info in copy.cutShort where index.blob(info.id)?.info.place == info.place {
            for slot in index.liveSlots where index.blob(ofEntry: slot).id == info.id { remove(slot: slot, reason: .damaged) }
        }
        return journal.file
    }

    /// Deletes the collected segments once the journal naming the copies is fsynced (a victim
    /// still holding a live record, which cannot happen, would be kept). Runs under the lock.
    func finish(_ collection: PackCollection) {
        for number in collection.victims where index.liveBytes(inSegment: number) == 0 {
            try? store.deleteSegment(number)
        }
        counters.packCollections += 1
        packCollectionBackoff = 0
    }

    /// Gives up a collection that failed: its reserved number (its staged file is gone: `copy`
    /// and `adopt` remove it when they fail), and no retry until the dead bytes grow by half an
    /// allowance. A file named with the number is another process's segment, never removed.
    func abandon(_ collection: PackCollection) {
        if let number = collection.number, store.segmentSizes[number] == nil {
            store.releaseReservation(number)
        }
        packCollectionBackoff = deadPackBytes + packGarbageAllowance / 2
        #if BLOBCACHE_TESTING
        maintenanceFailures += 1
        #endif
    }
}
