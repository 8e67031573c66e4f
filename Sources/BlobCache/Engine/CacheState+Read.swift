/// Reads: the ticket a read takes under the lock to fetch a value outside it, and what a read
/// that failed its checks outside comes to.
extension CacheState {
    /// What a reader needs to fetch a value outside the lock.
    struct ReadTicket: Sendable {
        let info: BlobInfo
        let location: BlobStore.Location?
        /// The value itself when the memory tier held it (no disk read needed).
        var value: [UInt8]? = nil
        /// Whether the value read from disk goes into the memory tier (`MemoryTier.admit`).
        var remember = false
        /// `CacheState.releases` when the ticket was made.
        var releases: UInt64 = 0
    }

    /// Counts a read of `key` that found nothing.
    func countMiss(key: String) {
        counters.misses += 1
        telemetry.missed(key: key)
    }

    /// Marks a read of `key`'s unexpired entry in `slot` at `time` and returns where its bytes
    /// are. `journalingAccess`: an access due for the journal is journaled now (the caller
    /// holds the flock); otherwise the index alone is marked and `accessDue` tells the caller
    /// to keep the access for the next operation under the flock (until then the order is this
    /// open's alone; a clean close journals it).
    @inline(__always)
    func readEntry(key: String, at slot: Int32, time: Int64,
                   journalingAccess: Bool) throws -> (ticket: ReadTicket, accessDue: Bool) {
        let entry = index.entry(at: slot)
        let info = index.blob(at: entry.blob).info
        let remembered = memory.value(for: info.id)
        // First: a segment that cannot be opened counts no hit.
        let location = remembered == nil ? try store.location(of: info) : nil
        // Overflow-safe: a damaged record can hold any access time.
        let (elapsed, overflow) = time.subtractingReportingOverflow(entry.journaledAccess)
        let due = overflow || elapsed >= accessInterval
        index.touch(slot: slot, at: time, journaled: due && journalingAccess)
        if due && journalingAccess { journal.append(.access(key: key, time: time)) }
        counters.countHit(bytes: info.rawLength, fromMemory: remembered != nil)   // one access, not three
        if telemetry.metrics != nil { telemetry.hit(key: key, bytes: info.rawLength, fromMemory: remembered != nil) }
        let ticket = ReadTicket(info: info, location: location, value: remembered,
                                remember: remembered == nil && memory.admit(info.id, size: info.rawLength), releases: releases)
        return (ticket, due && !journalingAccess)
    }

    /// Looks a blob up by id for reading.
    func beginRead(id: BlobID) throws -> ReadTicket? {
        guard let blob = index.blob(id) else { return nil }
        if let value = memory.value(for: id) { return ReadTicket(info: blob.info, location: nil, value: value) }
        return ReadTicket(info: blob.info, location: try store.location(of: blob.info),
                          remember: memory.admit(id, size: blob.info.rawLength), releases: releases)
    }

    /// What a read that failed its checks outside the lock comes to.
    enum ReadRecovery {
        /// The blob reads fine now: the failure saw it while it was being removed and stored again.
        case value([UInt8])
        /// The blob is no longer stored (removed or evicted meanwhile).
        case miss
        /// The blob is damaged: its entries were dropped (reason `damaged`).
        case damaged(BlobCacheError)
    }

    /// Reads a blob again under the lock, where nothing can remove or re-add it, after a read
    /// outside it failed its checks, or may have read another value that took the id since its
    /// ticket. A failure is trusted only if the blob still fails here: a reader whose blob was
    /// deleted and stored again between its ticket and its open must not drop the new, good copy. When the blob is gone because `key` was given another value
    /// meanwhile, that value is read (the key was never absent, so a miss would be wrong).
    func blobFailed(_ info: BlobInfo, key: String?) throws -> ReadRecovery {
        // A keyed read asks the key what it holds now (not the id: once the read's blob was
        // released, another value with the same MD5 may be stored under it); a read by id, the id.
        var blob: CacheIndex.Blob?
        if let key {
            if let slot = index.slot(of: key), index.entry(at: slot).expiry > now() { blob = index.blob(ofEntry: slot) }
        } else {
            blob = index.blob(info.id)
        }
        // Only keyed reads counted a hit, and its bytes (reads by id count nothing): turned
        // into a miss, or into the bytes read again, once the outcome is known.
        func countMiss() {
            guard key != nil else { return }
            // Never below zero: the statistics may have been reset since the hit was counted.
            counters.hits = max(0, counters.hits - 1)
            counters.misses += 1
            counters.bytesRead = max(0, counters.bytesRead - info.rawLength)
        }
        guard let current = blob else {
            countMiss()
            return .miss
        }

        let damage: BlobDamage
        switch try pipeline.read(current.info, at: try store.location(of: current.info)) {
        case .success(let value):
            if key != nil { counters.bytesRead += value.count - info.rawLength }
            return .value(value)
        case .failure(let failure): damage = failure
        }
        dropEntries(of: current.id)
        counters.corruptReads += 1
        countMiss()
        return .damaged(.corruptBlob(id: current.id, path: store.describe(current.info), reason: damage.detail))
    }

    /// `index.slot(of:)` without copying the index: its closure, in a method of the index,
    /// captures the whole struct (a retain of each of its arrays on every lookup), where this
    /// one captures only the engine. It starts loading the entry's blob record too: most
    /// lookups by key are reads, which look at it next.
    func slot(of key: String) -> Int32? {
        var key = key
        return key.withUTF8 { index.slot(ofKeyBytes: UnsafeRawBufferPointer($0), prefetchingBlob: true) }
    }
}
