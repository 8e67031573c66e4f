/// A set as one engine operation: hashed and encoded outside the lock, then the dedup check
/// and the publish under it. A value already stored takes the lock once, a new one twice.
extension Engine {
    /// Stores `raw` under `key` and returns its id. `knownID`: the caller hashed it already.
    /// `ifAbsent`: leaves an unexpired entry of `key` as it is (a remote value written back
    /// must not replace a set made while it was being fetched). `remembering`: the value goes
    /// into the memory tier too (a loaded value, about to be read).
    ///
    ///     let id = try engine.set(raw, key: "k", expiry: .never, pinned: false)
    @discardableResult
    func set(_ raw: UnsafeRawBufferPointer, key: String, expiry: Expiry, pinned: Bool, knownID: BlobID? = nil,
             ifAbsent: Bool = false, remembering: Bool = false) throws -> BlobID {
        if pipeline.cipher != nil, raw.count > CacheCipher.maxPlaintext {
            throw BlobCacheError.valueTooLarge(storedBytes: raw.count, limit: CacheCipher.maxPlaintext)
        }
        // A large value's staging file, made while it is hashed; deleted unless `stage` takes it.
        var stagingFile: StagingFile?
        defer { pipeline.discard(stagingFile) }
        var preparedLarge: PreparedBlob?
        let id: BlobID
        if knownID == nil && raw.count >= Parallel.threshold {
            // Large: hash on one core while the others compress and create its file; a duplicate
            // wastes one compression and one create.
            let (prepared, file) = pipeline.prepareWithStagingFile(raw)
            (preparedLarge, stagingFile, id) = (prepared, file, prepared.id)
        } else {
            // Small: hash first, so a duplicate costs no compression at all.
            id = knownID ?? pipeline.hasher.id(of: raw)
        }
        // Looked up without the flock first: a new value (the common case) takes it once.
        let limit: Int?
        switch try read(.caughtUp, then: .writeMaintenanceIfItWrote, { reader -> Reading<Deduplication> in
            guard reader.holdsBlob(id) || ifAbsent && reader.holds(key) else { return .answer(.new(limit: reader.maxStoredBytes)) }
            return .write { writer in
                if try ifAbsent && writer.state.holds(key)
                    || writer.state.setExisting(key: key, id: id, value: raw, expiryRule: expiry, pinned: pinned,
                                                remembering: remembering) { return .done }
                return .new(limit: writer.reader.maxStoredBytes)
            }
        }) {
        case .done: return id
        case .new(let cap): limit = cap
        }
        let prepared = preparedLarge ?? pipeline.prepare(raw, id: id)
        if let limit, prepared.imageCount > limit {
            throw BlobCacheError.valueTooLarge(storedBytes: prepared.imageCount, limit: limit)
        }
        let staged: StagedLooseBlob?
        if prepared.packed {
            staged = nil
        } else if let file = stagingFile {
            stagingFile = nil
            staged = try pipeline.stage(prepared, in: file)
        } else {
            staged = try pipeline.stage(prepared)
        }
        let published: Bool
        do {
            published = try write { writer in
                if ifAbsent && writer.state.holds(key) { return false }
                return try writer.state.setNew(key: key, blob: prepared, value: raw, staged: staged, expiryRule: expiry,
                                               pinned: pinned, remembering: remembering)
            }
        } catch {
            pipeline.discard(staged)
            throw error
        }
        // Shared with a blob another set stored meanwhile: the staged copy is not needed.
        if !published { pipeline.discard(staged) }
        return prepared.id
    }

    /// What the first look under the lock made of a set.
    private enum Deduplication {
        /// The key points at the stored blob of the same bytes now (or holds a value and
        /// `ifAbsent` left it).
        case done
        /// The value must be stored: `limit` is the byte cap its stored bytes may not pass.
        case new(limit: Int?)
    }
}
