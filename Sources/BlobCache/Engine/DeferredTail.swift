/// What the journal after a deferred open's snapshot says: the last word on each key it names
/// (a set's entry, or a removal), and the one place of each blob its sets name.
///
/// Kept in `SlotTable`s under `KeyHash`, not in `Dictionary`s: the first `Dictionary` keyed by
/// `[UInt8]` or by `BlobID` in a process makes the Swift runtime scan every protocol
/// conformance in the process for the key's `Hashable`: a cold open + get of 100k entries whose
/// journal ended in 10 sets took 0.97 ms with them, 0.63 ms without.
///
///     var tail = DeferredTail(seed: header.seed)
///     guard tail.place(entry.blob) else { return nil }   // a second place for the same blob
///     tail.record(entry, forKey: Array(entry.key.utf8))
///     tail.lastWord(onKey: Array("k".utf8))               // .some(entry), .some(nil) or nil
struct DeferredTail {
    private let seed: UInt64
    private var keys: [[UInt8]] = []
    private var words: [EntryRecord?] = []
    private var keySlots = SlotTable()
    private var blobs: [BlobInfo] = []
    private var blobSlots = SlotTable()

    /// An empty tail whose tables hash under `seed`.
    init(seed: UInt64) { self.seed = seed }

    /// Makes `entry` (`nil`: a removal) the tail's last word on `key`.
    mutating func record(_ entry: EntryRecord?, forKey key: [UInt8]) {
        let hash = key.withUnsafeBytes { KeyHash.hash($0, seed: seed) }
        if let slot = keySlots.find(hash: hash, { keys[Int($0)] == key }) {
            words[Int(slot)] = entry
        } else {
            keySlots.insert(Int32(keys.count), hash: hash)
            keys.append(key)
            words.append(entry)
        }
    }

    /// The tail's last word on `key`: `.some(entry)`, `.some(nil)` for a removal, `nil` when
    /// the tail does not name it.
    func lastWord(onKey key: [UInt8]) -> EntryRecord?? {
        let hash = key.withUnsafeBytes { KeyHash.hash($0, seed: seed) }
        return keySlots.find(hash: hash, { keys[Int($0)] == key }).map { words[Int($0)] }
    }

    /// Notes where `blob` lies; `false` when an earlier set placed the same id differently
    /// (the index keeps one place per blob, so such a journal is replayed, not trusted).
    mutating func place(_ blob: BlobInfo) -> Bool {
        let hash = KeyHash.hash(blob.id, seed: seed)
        if let slot = blobSlots.find(hash: hash, { blobs[Int($0)].id == blob.id }) { return blobs[Int(slot)] == blob }
        blobSlots.insert(Int32(blobs.count), hash: hash)
        blobs.append(blob)
        return true
    }
}
