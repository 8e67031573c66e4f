/// The memory tier's operations: values offered after a read from disk, and answered at once
/// when the tier holds them (`Configuration.memoryLimit`).
extension Engine {
    /// Offers a value read from disk under a ticket taken at `releases` to the memory tier.
    func remember(_ value: [UInt8], id: BlobID, releases: UInt64) {
        _ = try? read(.thisOpen) { .answer($0.remember(value, id: id, releases: releases)) }
    }

    /// The value of `key` (raw) when the memory tier can answer at once, without any file I/O
    /// and without waiting for the lock: `nil` when another thread holds it, the index must
    /// catch up with other processes first, or the value is not in memory.
    func rememberedValue(forKey key: String) -> [UInt8]? {
        ifAvailable { sharing in CacheReader(sharing.state, deferringAccessesTo: sharing).rememberedValue(forKey: key) }
    }
}
