/// A get as one engine operation: the ticket taken under the lock (without the flock when the
/// index is current), the bytes read and checked outside it, and a failed check resolved
/// under it again, where nothing can change the blob.
extension Engine {
    /// The value under `key` (raw), or `nil` for a miss. A damaged blob throws `corruptBlob`
    /// (its entries dropped); wrong bytes are never returned.
    ///
    ///     let bytes = try engine.value(forKey: "k")
    func value(forKey key: String) throws -> [UInt8]? {
        guard let ticket = try ticket(forKey: key) else { return nil }
        return try finishRead(ticket, key: key)
    }

    /// The value whose id is `id`, whichever key (or none) stored it; `nil` when not stored.
    func value(for id: BlobID) throws -> [UInt8]? {
        guard let ticket = try read(.caughtUp, { .answer(try $0.beginRead(id: id)) }) else { return nil }
        return try finishRead(ticket)
    }

    /// Looks `key` up for reading and marks the access (straight after an open from the
    /// snapshot it has not restored yet, when it can and `beforeRestore`); then runs the
    /// maintenance a read made due.
    func ticket(forKey key: String, beforeRestore: Bool = true) throws -> CacheState.ReadTicket? {
        if beforeRestore, mayReadBeforeRestore.load(ordering: .relaxed) {
            switch try read(.thisOpen, { .answer(try $0.readBeforeRestore(key: key)) }) {
            case .found(let ticket): return ticket
            case .absent: return nil
            case .restored: mayReadBeforeRestore.store(false, ordering: .relaxed)
            case .needsIndex: break
            }
        }
        return try read(then: .getMaintenance) { try $0.beginRead(key: key) }
    }

    /// The bytes `ticket` points at, read and checked outside the lock.
    private func finishRead(_ ticket: CacheState.ReadTicket, key: String? = nil) throws -> [UInt8]? {
        if let value = ticket.value { return value }
        switch try pipeline.read(ticket.info, at: ticket.location) {
        case .success(let value):
            // A loose file is found by its id alone: when a blob was released (here or in
            // another open) since the ticket, another value with the same MD5 may have taken
            // the id, and the file read may be it. Read again under the lock, by the key.
            if case .loose? = ticket.location, try !nothingReleased(since: ticket) {
                return try readAgainUnderLock(ticket, key: key)
            }
            if ticket.remember { remember(value, id: ticket.info.id, releases: ticket.releases) }
            return value
        case .failure:
            return try readAgainUnderLock(ticket, key: key)
        }
    }

    /// Whether no blob was released since `ticket`, here or in another open: the index caught
    /// up with every committed record and no writer inside (`isCurrent`: a writer between its
    /// release and its commit would otherwise go unseen), and `releases` unmoved. Does not
    /// finish a deferred restore (nothing local is released before one: every write restores first).
    func nothingReleased(since ticket: CacheState.ReadTicket) throws -> Bool {
        try read(.thisOpen) { .answer($0.nothingReleased(since: ticket.releases)) }
    }

    /// Reads `ticket`'s value again under the lock, where nothing can change it, resolving a
    /// keyed read by what the key holds now (`CacheState.blobFailed`); damage found there is
    /// real, and thrown.
    private func readAgainUnderLock(_ ticket: CacheState.ReadTicket, key: String?) throws -> [UInt8]? {
        switch try write({ try $0.state.blobFailed(ticket.info, key: key) }) {
        case .value(let value): return value
        case .miss: return nil
        case .damaged(let error):
            telemetry.logger.warning("damaged blob dropped", metadata: ["directory": "\(directory)", "error": "\(error)"])
            throw error
        }
    }

    /// Offers a value read from disk under a ticket taken at `releases` to the memory tier.
    func remember(_ value: [UInt8], id: BlobID, releases: UInt64) {
        _ = try? read(.thisOpen) { .answer($0.remember(value, id: id, releases: releases)) }
    }
}
