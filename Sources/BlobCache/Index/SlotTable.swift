/// An open-addressing hash table of slot numbers (linear probing, at most 80% full), the
/// index's map from key to entry and from blob id to blob. Each 8-byte bucket holds a slot and
/// 32 bits of its hash: probes compare hashes without touching the entries, and deletion
/// shifts later buckets back (no tombstones, so lookups never slow down with churn) without
/// rehashing anything.
struct SlotTable {
    /// One bucket: a slot (-1 when empty) and the low 32 bits of its hash.
    struct Bucket: BitwiseCopyable, Equatable {
        var slot: Int32
        var hash: UInt32
        static let empty = Bucket(slot: -1, hash: 0)
    }

    private var buckets: FlatArray<Bucket>
    private var mask: Int
    private(set) var count = 0

    /// A table that holds `capacity` slots before it grows.
    init(capacity: Int = 0) {
        let size = Self.size(forCapacity: capacity)
        buckets = FlatArray(count: size) { $0.initialize(repeating: .empty) }
        mask = size - 1
    }

    /// How many buckets `init(capacity:)` makes: the smallest power of two, at least 16, that
    /// `capacity` fills to at most 80%.
    static func size(forCapacity capacity: Int) -> Int {
        var size = 16
        while !fits(capacity, in: size) { size <<= 1 }
        return size
    }

    /// The buckets as bytes, to be saved and given back to `init(buckets:slotCount:)`.
    func withSavedBuckets<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result { buckets.withUnsafeBytes(body) }

    /// A table from saved buckets; `nil` unless they are a power of two in number, each
    /// empty or a slot below `slotCount`, every slot in exactly one bucket (a slot listed twice
    /// would leave another unreachable, and removing that one would probe forever).
    init?(buckets: FlatArray<Bucket>, slotCount: Int) {
        self.buckets = buckets
        let size = buckets.count
        guard size >= 16, size & (size - 1) == 0, Self.fits(slotCount, in: size) else { return nil }
        let limit = Int32(truncatingIfNeeded: slotCount)
        let used = buckets.withUnsafeBufferPointer { buckets -> Int? in
            var seen = [UInt64](repeating: 0, count: (slotCount + 63) / 64)
            var used = 0
            for bucket in buckets where bucket.slot != Bucket.empty.slot {
                guard bucket.slot >= 0 && bucket.slot < limit else { return nil }
                let word = Int(bucket.slot) / 64, bit = UInt64(1) << (UInt64(bucket.slot) % 64)
                guard seen[word] & bit == 0 else { return nil }
                seen[word] |= bit
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
        let short = UInt32(truncatingIfNeeded: hash)
        return buckets.withUnsafeBufferPointer { buckets in
            var index = Int(short) & mask
            while true {
                let bucket = buckets[index]
                if bucket.slot < 0 { return nil }
                if bucket.hash == short && matches(bucket.slot) { return bucket.slot }
                index = (index + 1) & mask
            }
        }
    }

    /// Starts loading the bucket where a probe for `hash` starts, so that the probe or insert
    /// that follows finds it in cache: replay asks for a batch of records' buckets first, so
    /// that their cache misses overlap. A software prefetch, not a load: a load of each bucket
    /// held the core until it arrived (half the replay loop's own samples, `perf annotate`).
    @inline(__always)
    func prefetch(hash: UInt64) {
        buckets.prefetch(Int(UInt32(truncatingIfNeeded: hash)) & mask)
    }

    /// Adds `slot` (which must not be in the table) under `hash`.
    mutating func insert(_ slot: Int32, hash: UInt64) {
        if !Self.fits(count + 1, in: buckets.count) { grow() }
        place(Bucket(slot: slot, hash: UInt32(truncatingIfNeeded: hash)))
        count += 1
    }

    /// Puts `replacement` in the bucket of `slot` (both have the same hash).
    mutating func replace(_ slot: Int32, with replacement: Int32, hash: UInt64) {
        buckets[index(of: slot, hash: hash)].slot = replacement
    }

    /// Moves the buckets out of a mapped snapshot into memory of their own (`FlatArray.moveToOwnMemory`).
    mutating func moveToOwnMemory() { buckets.moveToOwnMemory() }

    /// Takes `slot` out, shifting back the buckets after it that probed past it.
    mutating func remove(_ slot: Int32, hash: UInt64) {
        let mask = mask
        var hole = index(of: slot, hash: hash)
        buckets.withUnsafeMutableBufferPointer { buckets in
            var next = (hole + 1) & mask
            while buckets[next].slot >= 0 {
                let home = Int(buckets[next].hash) & mask
                // It may move back when the hole lies cyclically within [home, next).
                if (hole - home) & mask < (next - home) & mask {
                    buckets[hole] = buckets[next]
                    hole = next
                }
                next = (next + 1) & mask
            }
            buckets[hole] = .empty
        }
        count -= 1
    }

    /// At most 80% full: linear probing still finds a key in under 3 probes on average, and
    /// 8-byte buckets cost 10–20 bytes an entry.
    private static func fits(_ count: Int, in size: Int) -> Bool { count * 5 <= size * 4 }

    private func index(of slot: Int32, hash: UInt64) -> Int {
        let mask = mask
        return buckets.withUnsafeBufferPointer { buckets in
            var index = Int(UInt32(truncatingIfNeeded: hash)) & mask
            while buckets[index].slot != slot { index = (index + 1) & mask }
            return index
        }
    }

    private mutating func place(_ bucket: Bucket) {
        let mask = mask
        buckets.withUnsafeMutableBufferPointer { buckets in
            var index = Int(bucket.hash) & mask
            while buckets[index].slot >= 0 { index = (index + 1) & mask }
            buckets[index] = bucket
        }
    }

    private mutating func grow() {
        let old = buckets
        buckets = FlatArray(count: old.count * 2) { $0.initialize(repeating: .empty) }
        mask = buckets.count - 1
        for bucket in old where bucket.slot >= 0 { place(bucket) }
    }
}
