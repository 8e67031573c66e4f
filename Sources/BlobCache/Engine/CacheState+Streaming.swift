#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension CacheState {
    /// Points `key` at a value written as a pieced blob and staged in `staged` (`info` names
    /// it): shares the stored blob of the same id once their bytes compare equal (a different
    /// value with that MD5 throws `contentCollision`), else publishes the staged file. Returns
    /// whether it was published (if not, the caller discards it).
    func setStreamed(key: String, info: BlobInfo, staged: StagedLooseBlob, expiryRule: Expiry, pinned: Bool) throws -> Bool {
        if let blob = index.blob(info.id) {
            try checkRoom(for: blob.info, key: key)
            if try confirmStoredCopy(of: blob.info, equalsStaged: staged, info: info, key: key) == .same {
                link(key: key, blob: blob.info, expiryRule: expiryRule, pinned: pinned)
                counters.deduplicatedSets += 1
                telemetry.dedupedSet(key: key)
                return false
            }
        }
        try checkRoom(for: info, key: key)
        try store.publish(staged)
        link(key: key, blob: info, expiryRule: expiryRule, pinned: pinned)
        counters.bytesWritten += info.footprint
        telemetry.wroteBlob(key: key, bytes: info.footprint)
        return true
    }

    /// `confirmStoredCopy(of:equals:key:)` for a value staged as a pieced blob: the two are
    /// compared chunk by chunk, neither held whole (but a stored blob of a whole-value format,
    /// which is read whole).
    func confirmStoredCopy(of blob: BlobInfo, equalsStaged staged: StagedLooseBlob, info: BlobInfo,
                           key: String) throws -> StoredCopy {
        guard pipeline.cipher == nil else { return .same }
        let stored: ChunkedRead
        switch try pipeline.openChunks(blob, at: try store.location(of: blob)) {
        case .success(let read): stored = read
        case .failure(let damage): return droppedDamaged(blob, damage)
        }
        let new: ChunkedRead
        switch try pipeline.openChunks(info, at: .loose(staged.temporary)) {
        case .success(let read): new = read
        case .failure(let damage):
            throw BlobCacheError.corruptBlob(id: info.id, path: staged.temporary.string, reason: damage.detail)
        }
        var storedChunk: [UInt8] = [], storedUsed = 0
        var newChunk: [UInt8] = [], newUsed = 0
        var same = stored.rawLength == new.rawLength
        while same {
            if storedUsed == storedChunk.count {
                switch try stored.next() {
                case .failure(let damage): return droppedDamaged(blob, damage)
                case .success(let chunk): (storedChunk, storedUsed) = (chunk ?? [], 0)
                }
            }
            if newUsed == newChunk.count {
                switch try new.next() {
                case .failure(let damage):
                    throw BlobCacheError.corruptBlob(id: info.id, path: staged.temporary.string, reason: damage.detail)
                case .success(let chunk): (newChunk, newUsed) = (chunk ?? [], 0)
                }
            }
            let count = min(storedChunk.count - storedUsed, newChunk.count - newUsed)
            if count == 0 {
                // Both ended together (the lengths agree), or one ran dry early: damage that the
                // length checks let through would show as a mismatch, never as equality.
                same = storedChunk.count == storedUsed && newChunk.count == newUsed
                break
            }
            same = storedChunk.withUnsafeBytes { s in
                newChunk.withUnsafeBytes { n in memcmp(s.baseAddress! + storedUsed, n.baseAddress! + newUsed, count) == 0 }
            }
            storedUsed += count
            newUsed += count
        }
        guard same else {
            counters.contentCollisions += 1
            telemetry.refusedCollision(key: key)
            throw BlobCacheError.contentCollision(id: blob.id)
        }
        return .same
    }

    /// Drops the entries of a stored blob a set found damaged, so the set stores its own copy.
    func droppedDamaged(_ blob: BlobInfo, _ damage: BlobDamage) -> StoredCopy {
        dropEntries(of: blob.id)
        counters.corruptReads += 1
        telemetry.logger.warning("damaged blob dropped before a set stored its value again",
                                 metadata: ["id": "\(blob.id.hex)", "reason": "\(damage.detail)"])
        return .damaged
    }

    /// The blob `key` holds now, unexpired, and where it is, without counting a read: a
    /// streamed read that must open its file under the lock (a blob was released since its
    /// ticket) looks the key up again here.
    func currentBlob(forKey key: String) throws -> (info: BlobInfo, location: BlobStore.Location?)? {
        guard let slot = index.slot(of: key), index.entry(at: slot).expiry > now() else { return nil }
        let info = index.blob(ofEntry: slot).info
        return (info, try store.location(of: info))
    }

    /// After a streamed read found `info`'s blob damaged part way: drops its entries when the
    /// file read is the blob's own, which holds when no blob was released since the read opened
    /// it (`releases`), or when the index still places the blob there and the file at its name
    /// is the one read (`file`: device and inode). Returns the error to throw.
    func streamedReadFailed(_ info: BlobInfo, releases: UInt64, file: FileIdentity?, damage: BlobDamage) -> BlobCacheError {
        if let current = index.blob(info.id), current.info.place == info.place,
           self.releases == releases || file != nil && io.status(store.files.loosePath(of: info.id)).map(FileIdentity.init) == file {
            dropEntries(of: info.id)
            counters.corruptReads += 1
        }
        return .corruptBlob(id: info.id, path: store.describe(info), reason: damage.detail)
    }
}
