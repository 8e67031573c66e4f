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
    private var slots: [BlobID: Int32] = [:]
    private var oldest: Int32 = -1
    private var newest: Int32 = -1

    /// A tier holding at most `limit` bytes (0: none at all).
    init(limit: Int) { self.limit = max(0, limit) }

    /// Values held.
    var count: Int { slots.count }

    /// Whether a value of `size` bytes would be kept.
    func admits(size: Int) -> Bool { limit > 0 && size <= limit / 8 }

    /// Whether it holds blob `id`'s value (not counted as a use).
    func contains(_ id: BlobID) -> Bool { slots[id] != nil }

    /// The value of blob `id`, now the most recently used; `nil` when not held.
    mutating func value(for id: BlobID) -> [UInt8]? {
        guard let slot = slots[id] else { return nil }
        moveToNewest(slot)
        return nodes[Int(slot)].value
    }

    /// Keeps `value` as blob `id`'s bytes (when small enough), evicting the least recently used.
    mutating func insert(_ value: [UInt8], for id: BlobID) {
        guard admits(size: value.count), slots[id] == nil else { return }
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
        slots[id] = slot
        bytes += value.count
    }

    /// Forgets blob `id` (its last entry went).
    mutating func remove(_ id: BlobID) {
        if let slot = slots[id] { remove(slot: slot) }
    }

    /// Forgets every value.
    mutating func removeAll() {
        nodes.removeAll()
        freeNodes.removeAll()
        slots.removeAll()
        oldest = -1
        newest = -1
        bytes = 0
    }

    private mutating func remove(slot: Int32) {
        unlink(slot)
        slots[nodes[Int(slot)].id] = nil
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
