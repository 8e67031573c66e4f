#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension CacheState {
    /// What a set learns when it compares its value with the stored blob of the same id.
    enum StoredCopy {
        /// The stored blob holds the same bytes: the set may share it.
        case same
        /// The stored blob failed its checks: its entries were dropped (reason `damaged`), so
        /// the set stores its own copy as a new blob.
        case damaged
    }

    /// Confirms that the blob `blob` (whose id is `value`'s MD5) holds `value`'s bytes before a
    /// set shares it: an MD5 names a value but does not prove two values equal, and the public
    /// collision pairs make two values with one MD5 in seconds. Runs under the lock, where
    /// nothing can remove the blob or store another one under its id between the comparison and
    /// the link. Throws `contentCollision` (and counts it) when the bytes differ.
    ///
    /// An encrypted cache's ids are HMAC-MD5 under its key, which nobody without the key can
    /// make collide: it compares nothing.
    func confirmStoredCopy(of blob: BlobInfo, equals value: UnsafeRawBufferPointer, key: String) throws -> StoredCopy {
        guard pipeline.cipher == nil else { return .same }
        let stored: [UInt8]
        if let remembered = memory.value(for: blob.id) {
            stored = remembered
        } else {
            switch try pipeline.read(blob, at: try store.location(of: blob)) {
            case .success(let bytes): stored = bytes
            case .failure(let damage): return droppedDamaged(blob, damage)
            }
        }
        let same = stored.count == value.count && stored.withUnsafeBytes { storedBytes in
            value.count == 0 || memcmp(storedBytes.baseAddress!, value.baseAddress!, value.count) == 0
        }
        guard same else {
            counters.contentCollisions += 1
            telemetry.refusedCollision(key: key)
            throw BlobCacheError.contentCollision(id: blob.id)
        }
        return .same
    }

    /// Removes every entry that uses blob `id` (reason `damaged`), which releases the blob.
    func dropEntries(of id: BlobID) {
        var slots: [Int32] = []
        for slot in index.liveSlots where index.blob(ofEntry: slot).id == id { slots.append(slot) }
        for slot in slots { remove(slot: slot, reason: .damaged) }
    }
}
