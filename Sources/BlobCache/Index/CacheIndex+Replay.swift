extension CacheIndex {
    /// Applies one replayed journal record; `false` (and nothing changed) when the index cannot
    /// take it (`admits`): replay treats it as damage and stops there.
    @discardableResult
    mutating func apply(_ record: JournalRecord) -> Bool {
        guard admits(record) else { return false }
        switch record {
        case .set(let entry):
            upsert(entry, orderJournaled: true)
        case .access(let key, let time):
            if let slot = slot(of: key) { touch(slot: slot, at: time, journaled: true) }
        case .remove(let key, _):
            if let slot = slot(of: key) { remove(slot: slot) }
        case .removeAll(let includingPinned):
            _ = removeAll(includingPinned: includingPinned)
        case .relocate(let blob):
            relocate(blob)
        }
        return true
    }
}
