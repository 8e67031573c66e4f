/// An open-addressing hash table of slot numbers (linear probing, at most 80% full), the
/// index's map from key to entry and from blob id to blob. It stores only 4 bytes a bucket:
/// callers keep each slot's hash and say how to compare, so nothing is stored twice.
///
/// Deletion shifts later buckets back (no tombstones), so lookups never slow down with churn.
struct SlotTable {
    private static let empty: Int32 = -1
    private var buckets: FlatArray<Int32>
    private var mask: Int
    private(set) var count = 0

    /// A table that holds `capacity` slots before it grows.
    init(capacity: Int = 0) {
        let size = Self.size(forCapacity: capacity)
        buckets = FlatArray(count: size) { $0.initialize(repeating: Self.empty) }
        mask = size - 1
    }

    /// How many buckets `init(capacity:)` makes: the smallest power of two, at least 16, that
    /// `capacity` fills to at most 80%.
    static func size(forCapacity capacity: Int) -> Int {
        var size = 16
        while !fits(capacity, in: size) { size <<= 1 }
        return size
    }

    /// The buckets (-1 for empty) as bytes, to be saved and given back to `init(buckets:slotCount:)`.
    func withSavedBuckets<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result { buckets.withUnsafeBytes(body) }

    /// A table from saved buckets; `nil` unless they are a power of two in number, each
    /// empty or a slot below `slotCount`, with exactly `slotCount` in use.
    init?(buckets: FlatArray<Int32>, slotCount: Int) {
        self.buckets = buckets
        let size = buckets.count
        guard size >= 16, size & (size - 1) == 0, Self.fits(slotCount, in: size) else { return nil }
        let limit = Int32(truncatingIfNeeded: slotCount)
        let used = buckets.withUnsafeBufferPointer { buckets -> Int? in
            var used = 0
            for slot in buckets where slot != Self.empty {
                guard slot >= 0 && slot < limit else { return nil }
                used += 1
            }
            return used
        }
        guard used == slotCount else { return nil }
        mask = size - 1
        count = slotCount
    }

    /// The slot whose hash is `hash` and that `matches`, if any.
    @inline(__always)
    func find(hash: UInt64, _ matches: (Int32) -> Bool) -> Int32? {
        var bucket = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = buckets[bucket]
            if slot == Self.empty { return nil }
            if matches(slot) { return slot }
            bucket = (bucket + 1) & mask
        }
    }

    /// Adds `slot` (which must not be in the table) under `hash`.
    mutating func insert(_ slot: Int32, hash: UInt64, hashOf: (Int32) -> UInt64) {
        if !Self.fits(count + 1, in: buckets.count) { grow(hashOf: hashOf) }
        place(slot, hash: hash)
        count += 1
    }

    /// Puts `replacement` in the bucket of `slot` (both have the same hash).
    mutating func replace(_ slot: Int32, with replacement: Int32, hash: UInt64) {
        buckets[bucket(of: slot, hash: hash)] = replacement
    }

    /// Takes `slot` out, shifting back the buckets after it that probed past it.
    mutating func remove(_ slot: Int32, hash: UInt64, hashOf: (Int32) -> UInt64) {
        var hole = bucket(of: slot, hash: hash)
        var next = (hole + 1) & mask
        while buckets[next] != Self.empty {
            let home = Int(truncatingIfNeeded: hashOf(buckets[next])) & mask
            // Move it back when its home is not cyclically within (hole, next].
            let distanceToNext = (next - home) & mask
            let distanceToHole = (hole - home) & mask
            if distanceToHole < distanceToNext {
                buckets[hole] = buckets[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        buckets[hole] = Self.empty
        count -= 1
    }

    /// Empties the table, keeping its size.
    mutating func removeAll() {
        for index in buckets.indices { buckets[index] = Self.empty }
        count = 0
    }

    /// Bytes the table takes.
    var footprint: Int { buckets.count * MemoryLayout<Int32>.stride }

    /// At most 80% full: linear probing still finds a key in under 3 probes on average, and
    /// 4-byte buckets cost 5–10 bytes an entry.
    private static func fits(_ count: Int, in size: Int) -> Bool { count * 5 <= size * 4 }

    private func bucket(of slot: Int32, hash: UInt64) -> Int {
        var bucket = Int(truncatingIfNeeded: hash) & mask
        while buckets[bucket] != slot { bucket = (bucket + 1) & mask }
        return bucket
    }

    private mutating func place(_ slot: Int32, hash: UInt64) {
        var bucket = Int(truncatingIfNeeded: hash) & mask
        while buckets[bucket] != Self.empty { bucket = (bucket + 1) & mask }
        buckets[bucket] = slot
    }

    private mutating func grow(hashOf: (Int32) -> UInt64) {
        let old = buckets
        buckets = FlatArray(count: old.count * 2) { $0.initialize(repeating: Self.empty) }
        mask = buckets.count - 1
        for slot in old where slot != Self.empty { place(slot, hash: hashOf(slot)) }
    }
}
