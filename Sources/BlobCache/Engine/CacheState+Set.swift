/// Sets: pointing a key at a blob already stored, or at one just published, and refusing what
/// could never fit.
extension CacheState {
    /// Whether `key` holds an unexpired entry.
    func holds(_ key: String) -> Bool {
        guard let slot = index.slot(of: key) else { return false }
        return index.entry(at: slot).expiry > now()
    }

    /// Points `key` at a blob the index already holds, once its bytes are confirmed to be
    /// `value`'s (`confirmStoredCopy`: a different value with the same MD5 throws
    /// `contentCollision`); `false` when the index does not hold it, or held it damaged (its
    /// entries are dropped, so the caller stores `value` as a new blob).
    /// `remembering`: the value goes into the memory tier too, under this lock (where its id
    /// surely names it).
    func setExisting(key: String, id: BlobID, value: UnsafeRawBufferPointer, expiryRule: Expiry, pinned: Bool,
                     remembering: Bool = false) throws -> Bool {
        guard let blob = index.blob(id) else { return false }
        try checkRoom(for: blob.info, key: key)
        guard try confirmStoredCopy(of: blob.info, equals: value, key: key) == .same else { return false }
        link(key: key, blob: blob.info, expiryRule: expiryRule, pinned: pinned)
        if remembering { memory.insert(Array(value), for: id) }
        counters.deduplicatedSets += 1
        telemetry.dedupedSet(key: key)
        return true
    }

    /// Publishes a newly prepared blob (renaming its staged file, or appending its pack record)
    /// and points `key` at it; returns whether it was published. When another set stored the
    /// same blob meanwhile, that blob is shared (and the caller discards its staged file).
    @discardableResult
    func setNew(key: String, blob prepared: PreparedBlob, value: UnsafeRawBufferPointer, staged: StagedLooseBlob?,
                expiryRule: Expiry, pinned: Bool, remembering: Bool = false) throws -> Bool {
        if index.blob(prepared.id) != nil, try setExisting(key: key, id: prepared.id, value: value, expiryRule: expiryRule, pinned: pinned,
                           remembering: remembering) { return false }
        var info = prepared.info
        try checkRoom(for: info, key: key)
        if let staged {
            try store.publish(staged)
        } else {
            info.place = try store.append(prepared)
        }
        link(key: key, blob: info, expiryRule: expiryRule, pinned: pinned)
        if remembering { memory.insert(Array(value), for: info.id) }
        counters.bytesWritten += info.footprint
        telemetry.wroteBlob(key: key, bytes: info.footprint)
        return true
    }

    /// The entry update shared by both kinds of set: index and journal record.
    func link(key: String, blob: BlobInfo, expiryRule: Expiry, pinned: Bool) {
        let time = now()
        let record = EntryRecord(key: key, blob: blob, pinned: pinned, created: time,
                                 expiry: expiryRule.deadline(from: time), access: time)
        if let replaced = index.upsert(record, orderJournaled: true) { release(replaced) }
        journal.append(.set(record))
        counters.sets += 1
        // Whatever was pinned over a namespace's cap may not be now: let eviction look again.
        if !namespacesOverPinned.isEmpty { namespacesOverPinned.removeAll() }
        if recordsChanges { madeChanges.append(.set(key: key, id: blob.id)) }
    }

    /// Refuses a set that could never fit: a value over the byte cap, or pinned entries (which
    /// eviction cannot touch) that would exceed a cap together with this one.
    func checkRoom(for blob: BlobInfo, key: String) throws {
        let replacedSlot = index.slot(of: key)
        let replaced = replacedSlot.map { index.entry(at: $0) }
        if replacedSlot == nil, !index.hasRoom(forKeyOf: key.utf8.count) {
            throw BlobCacheError.invalidKey(reason: "the cache's keys would take more than 4 GiB in all")
        }
        if let prefix = NamespaceKey.prefix(ofRawKey: key), let max = namespaceLimits[prefix], blob.footprint > max {
            throw BlobCacheError.valueTooLarge(storedBytes: blob.footprint, limit: max)
        }
        if let max = limits.maxStoredBytes {
            if blob.footprint > max { throw BlobCacheError.valueTooLarge(storedBytes: blob.footprint, limit: max) }
            var floor = index.pinnedStoredBytes
            if (index.blob(blob.id)?.pinnedReferences ?? 0) == 0 { floor += blob.footprint }
            if let replacedSlot, let replaced, replaced.pinned, case let old = index.blob(ofEntry: replacedSlot), old.id != blob.id,
               old.pinnedReferences == 1 {
                floor -= old.info.footprint
            }
            if floor > max {
                throw BlobCacheError.pinnedEntriesExceedLimit(
                    detail: "pinned entries hold \(index.pinnedStoredBytes) bytes; with this value \(floor) > \(max)")
            }
        }
        if let max = limits.maxEntries {
            let floor = index.pinnedEntries + 1 - ((replaced?.pinned ?? false) ? 1 : 0)
            if floor > max {
                throw BlobCacheError.pinnedEntriesExceedLimit(detail: "\(index.pinnedEntries) pinned entries; the limit is \(max) entries")
            }
        }
    }
}
