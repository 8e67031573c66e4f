/// Streamed sets and gets as engine operations: a value written as a pieced blob published,
/// and a value opened for reading in checked chunks.
extension Engine {
    /// Links `key` to a value a `PendingSet` wrote as a pieced blob and staged in `staged`,
    /// sharing the stored copy of the same bytes if any (the staged file is then discarded).
    func publishStreamed(info: BlobInfo, staged: StagedLooseBlob, key: String, expiry: Expiry, pinned: Bool) throws {
        let published: Bool
        do {
            published = try write { try $0.state.setStreamed(key: key, info: info, staged: staged, expiryRule: expiry, pinned: pinned) }
        } catch {
            pipeline.discard(staged)
            throw error
        }
        if !published { pipeline.discard(staged) }
    }

    /// What opening a value for a streamed read found.
    enum OpenedValue {
        /// The key holds nothing.
        case miss
        /// The key's value went (removed, evicted, expired) between the ticket and the open:
        /// nothing to read, and nothing to ask the remote tier for.
        case gone
        /// The memory tier held the value whole.
        case whole([UInt8], BlobInfo)
        /// The value's blob, open for reading in checked chunks; `releases` as of its opening.
        case chunks(ChunkedRead, BlobInfo, releases: UInt64)
    }

    /// Opens the value under `key` (raw) for reading in checked chunks. Opened outside the
    /// lock, the file is the key's only if no blob was released since the ticket (another
    /// value of the same MD5 may have taken the id); else it is opened again under the lock,
    /// where the key's blob and its file cannot change.
    func openValue(forKey key: String) throws -> OpenedValue {
        guard let ticket = try ticket(forKey: key, beforeRestore: false) else { return .miss }
        if let value = ticket.value { return .whole(value, ticket.info) }
        if case .success(let read) = try pipeline.openChunks(ticket.info, at: ticket.location), try nothingReleased(since: ticket) {
            return .chunks(read, ticket.info, releases: ticket.releases)
        }
        let reopened = try write { writer -> Result<OpenedValue, BlobCacheError> in
            let state = writer.state
            guard let (info, location) = try state.currentBlob(forKey: key) else { return .success(.gone) }
            switch try pipeline.openChunks(info, at: location) {
            case .success(let read): return .success(.chunks(read, info, releases: state.releases))
            case .failure(let damage): return .failure(state.streamedReadFailed(info, releases: state.releases, file: nil, damage: damage))
            }
        }
        switch reopened {
        case .success(let opened): return opened
        case .failure(let error):
            telemetry.logger.warning("damaged blob dropped", metadata: ["directory": "\(directory)", "error": "\(error)"])
            throw error
        }
    }

    /// A streamed read's damage, found part way: the entries are dropped when the file read is
    /// the blob's own (`CacheState.streamedReadFailed`), and the error is returned to be thrown.
    func streamedReadFailed(_ info: BlobInfo, releases: UInt64, file: FileIdentity?, damage: BlobDamage) -> BlobCacheError {
        let error = (try? write { $0.state.streamedReadFailed(info, releases: releases, file: file, damage: damage) })
            ?? .corruptBlob(id: info.id, path: "", reason: damage.detail)
        telemetry.logger.warning("damaged blob dropped", metadata: ["directory": "\(directory)", "error": "\(error)"])
        return error
    }
}
