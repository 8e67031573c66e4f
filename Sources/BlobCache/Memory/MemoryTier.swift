/// Decoded values kept in memory, by blob id, least recently used first out, within a byte
/// limit (`BlobCache.Configuration.memoryLimit`).
///
/// Keyed by content: a blob's bytes never change, so a value found here is right whenever the
/// index maps the key to its id. The index stays the only authority on which key holds what
/// (other processes' changes reach it by the catch-up every operation makes first), so the
/// memory tier can never return a value the disk tier no longer holds or that has expired.
/// Lives inside the engine, under the cache's lock.
struct MemoryTier {
    /// Bytes of values it may hold; values over an eighth of it are not kept.
    let limit: Int
    /// Bytes of the values it holds.
    private(set) var bytes = 0

    private struct Node {
        var id: BlobID
        var value: [UInt8]
        var older: Int32
        var newer: Int32
    }

    private var nodes: [Node] = []
    private var freeNodes: [Int32] = []
    /// Node slots by id: an open-addressing table on a word of the digest (already uniform),
    /// which costs a fraction of `Dictionary`'s hashing on every read that misses here.
    private var slots = SlotTable()
    private var oldest: Int32 = -1
    private var newest: Int32 = -1
    /// The doorkeeper: the ids read from disk once lately, as two generations of a two-bit
    /// Bloom filter (the older one dropped when the newer has taken `generation` ids). Once the
    /// tier is full, a value is kept only when read from disk again while its id is remembered,
    /// so that a scan of more values than the tier holds (each read once) does not pay, on
    /// every read, for an insert, an eviction and cold memory for values evicted before they
    /// are read again. The filter remembers the last `generation` to `2 * generation` ids,
    /// about what the tier holds.
    private var seen: [UInt64] = []
    private var seenInCurrent = 0
    /// Ids a filter generation takes: about half the values of 8 KiB the tier holds, a power of 2.
    private var generation: Int { min(1 << 20, max(256, 1 << max(0, (Int.bitWidth - 1 - (limit / 8192).leadingZeroBitCount)))) }

    /// A tier holding at most `limit` bytes (0: none at all).
    init(limit: Int) { self.limit = max(0, limit) }

    /// Values held.
    var count: Int { slots.count }

    /// Whether a value of `size` bytes would be kept.
    func admits(size: Int) -> Bool { limit > 0 && size <= limit / 8 }

    /// Whether a value of `size` bytes just missed here and about to be read from disk should be
    /// kept afterwards: at once while there is room, else at its second read while the
    /// doorkeeper remembers the first.
    mutating func admit(_ id: BlobID, size: Int) -> Bool {
        guard admits(size: size) else { return false }
        // With room to spare nothing is evicted for it: kept at once (the doorkeeper guards
        // the full tier, whose values a scan would push out).
        if bytes + size <= limit { return true }
        // A blocked filter: both of an id's bits in one word, and that word of both generations
        // side by side, so a lookup touches one cache line: each get streams kilobytes of value
        // through the caches, and a filter read from all over memory missed them on every read.
        let words = generation / 2   // 32 bits an id
        if seen.isEmpty { seen = [UInt64](repeating: 0, count: 2 * words) }
        let (high, low) = id.doorkeeperWords
        let word = 2 * Int(high & UInt64(words - 1))   // `words` is a power of 2
        let bits: UInt64 = (1 << (low & 63)) | (1 << (low >> 6 & 63))
        if seen[word] & bits == bits || seen[word + 1] & bits == bits { return true }
        seen[word] |= bits
        seenInCurrent += 1
        if seenInCurrent >= generation {
            // The newer generation becomes the older one; the older one is forgotten.
            for index in stride(from: 0, to: seen.count, by: 2) {
                seen[index + 1] = seen[index]
                seen[index] = 0
            }
            seenInCurrent = 0
        }
        return false
    }

    /// Whether it holds blob `id`'s value (not counted as a use).
    func contains(_ id: BlobID) -> Bool { slot(of: id) != nil }

    private func slot(of id: BlobID) -> Int32? {
        guard slots.count > 0 else { return nil }
        return slots.find(hash: id.doorkeeperWords.1) { nodes[Int($0)].id == id }
    }

    /// The value of blob `id`, now the most recently used; `nil` when not held.
    mutating func value(for id: BlobID) -> [UInt8]? {
        guard let slot = slot(of: id) else { return nil }
        moveToNewest(slot)
        return nodes[Int(slot)].value
    }

    /// Keeps `value` as blob `id`'s bytes (when small enough), evicting the least recently used.
    mutating func insert(_ value: [UInt8], for id: BlobID) {
        guard admits(size: value.count), slot(of: id) == nil else { return }
        while bytes + value.count > limit, oldest >= 0 { remove(slot: oldest) }
        let node = Node(id: id, value: value, older: newest, newer: -1)
        let slot: Int32
        if let free = freeNodes.popLast() {
            slot = free
            nodes[Int(slot)] = node
        } else {
            slot = Int32(nodes.count)
            nodes.append(node)
        }
        if newest >= 0 { nodes[Int(newest)].newer = slot } else { oldest = slot }
        newest = slot
        slots.insert(slot, hash: id.doorkeeperWords.1)
        bytes += value.count
    }

    /// Forgets blob `id` (its last entry went).
    mutating func remove(_ id: BlobID) {
        if let slot = slot(of: id) { remove(slot: slot) }
    }

    /// Forgets every value.
    mutating func removeAll() {
        nodes.removeAll()
        freeNodes.removeAll()
        slots = SlotTable()
        oldest = -1
        newest = -1
        bytes = 0
    }

    private mutating func remove(slot: Int32) {
        unlink(slot)
        slots.remove(slot, hash: nodes[Int(slot)].id.doorkeeperWords.1)
        bytes -= nodes[Int(slot)].value.count
        nodes[Int(slot)].value = []
        freeNodes.append(slot)
    }

    private mutating func moveToNewest(_ slot: Int32) {
        guard newest != slot else { return }
        unlink(slot)
        nodes[Int(slot)].older = newest
        nodes[Int(slot)].newer = -1
        nodes[Int(newest)].newer = slot
        newest = slot
    }

    private mutating func unlink(_ slot: Int32) {
        let node = nodes[Int(slot)]
        if node.older >= 0 { nodes[Int(node.older)].newer = node.newer } else { oldest = node.newer }
        if node.newer >= 0 { nodes[Int(node.newer)].older = node.older } else { newest = node.older }
    }
}

extension BlobID {
    /// Two words of the digest for the memory tier's doorkeeper (uniform already).
    var doorkeeperWords: (UInt64, UInt64) { (high, low) }
}
