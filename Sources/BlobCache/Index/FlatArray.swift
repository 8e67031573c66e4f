import CZlib

/// A growable array of plain values (value semantics, copy on write) whose storage can also be
/// a section of a privately mapped file: a restored index snapshot is used where it lies in the
/// page cache instead of being copied into freshly zeroed memory (whose page faults were the
/// largest cost of a restore in `perf record -g workload w4-open DIR KEY`). Writing to a mapped element copies only its page (MAP_PRIVATE);
/// growing past a mapped section moves the array to ordinary memory.
struct FlatArray<Element: BitwiseCopyable>: RandomAccessCollection, MutableCollection {
    private final class Storage {
        let base: UnsafeMutablePointer<Element>
        var count: Int
        let capacity: Int
        /// The mapping `base` points into, kept alive with it; `nil` when `base` was allocated.
        let mapping: MappedFile?

        init(capacity: Int) {
            self.capacity = Swift.max(capacity, 1)
            base = UnsafeMutablePointer<Element>.allocate(capacity: self.capacity)
            count = 0
            mapping = nil
        }

        init(mapping: MappedFile, offset: Int, count: Int) {
            base = (mapping.mutableBase + offset).bindMemory(to: Element.self, capacity: count)
            self.count = count
            capacity = count
            self.mapping = mapping
        }

        deinit {
            if mapping == nil { base.deallocate() }
        }
    }

    private var storage: Storage

    /// An empty array.
    init() { storage = Storage(capacity: 0) }

    /// `count` elements that `fill` initialises, in new memory.
    init(count: Int, _ fill: (UnsafeMutableBufferPointer<Element>) -> Void) {
        storage = Storage(capacity: count)
        fill(UnsafeMutableBufferPointer(start: storage.base, count: count))
        storage.count = count
    }

    /// `count` elements stored at byte `offset` of `mapping`, which must be aligned for them.
    init(mapping: MappedFile, offset: Int, count: Int) {
        precondition(offset % MemoryLayout<Element>.alignment == 0 && offset + count * MemoryLayout<Element>.stride <= mapping.count)
        storage = Storage(mapping: mapping, offset: offset, count: count)
    }

    var startIndex: Int { 0 }
    var endIndex: Int { storage.count }
    var capacity: Int { storage.capacity }
    /// Whether the elements still lie in a mapped file.
    var isMapped: Bool { storage.mapping != nil }

    subscript(position: Int) -> Element {
        get {
            precondition(position >= 0 && position < storage.count, "index out of range")
            return storage.base[position]
        }
        set {
            precondition(position >= 0 && position < storage.count, "index out of range")
            makeUnique(capacity: storage.capacity)
            storage.base[position] = newValue
        }
        _modify {
            precondition(position >= 0 && position < storage.count, "index out of range")
            makeUnique(capacity: storage.capacity)
            yield &storage.base[position]
        }
    }

    mutating func append(_ element: Element) {
        makeUnique(capacity: grownCapacity(for: storage.count + 1))
        (storage.base + storage.count).initialize(to: element)
        storage.count += 1
    }

    mutating func append(contentsOf elements: UnsafeBufferPointer<Element>) {
        let needed = storage.count + elements.count
        makeUnique(capacity: grownCapacity(for: needed))
        if let source = elements.baseAddress { (storage.base + storage.count).initialize(from: source, count: elements.count) }
        storage.count = needed
    }

    /// Room for `capacity` elements, in storage of this array's own (as `Array` does).
    mutating func reserveCapacity(_ capacity: Int) {
        makeUnique(capacity: Swift.max(capacity, storage.capacity))
    }

    /// Moves the elements out of a mapped file into memory of their own (same capacity), for
    /// an array about to be written all over: each first write to a mapped page copies it and,
    /// while another thread of the process runs, interrupts that thread's core to flush its
    /// TLB (a third of a replay onto a restored snapshot went to those, `perf record -g`).
    mutating func moveToOwnMemory() {
        if isMapped { moveStorage(capacity: storage.capacity) }
    }

    func withUnsafeBufferPointer<Result>(_ body: (UnsafeBufferPointer<Element>) throws -> Result) rethrows -> Result {
        try body(UnsafeBufferPointer(start: storage.base, count: storage.count))
    }

    /// Calls `body` with the elements to change in place (one uniqueness check for all of them).
    mutating func withUnsafeMutableBufferPointer<Result>(_ body: (UnsafeMutableBufferPointer<Element>) throws -> Result) rethrows -> Result {
        makeUnique(capacity: storage.capacity)
        return try body(UnsafeMutableBufferPointer(start: storage.base, count: storage.count))
    }

    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: storage.base, count: storage.count * MemoryLayout<Element>.stride))
    }

    /// The capacity to hold `needed` elements: the current one if it is enough, else at least
    /// double (so appends are amortised O(1), also from a mapped section of capacity 0).
    private func grownCapacity(for needed: Int) -> Int {
        needed <= storage.capacity ? storage.capacity : Swift.max(needed, storage.capacity * 2, 16)
    }

    /// Makes the storage this array's own, with room for `capacity` elements, moving it to new
    /// memory when it is shared, too small, or a mapped section that must grow.
    private mutating func makeUnique(capacity: Int) {
        if isKnownUniquelyReferenced(&storage) && capacity <= storage.capacity { return }
        moveStorage(capacity: capacity)
    }

    /// Copies the elements into new memory with room for `capacity`.
    private mutating func moveStorage(capacity: Int) {
        let fresh = Storage(capacity: capacity)
        fresh.base.initialize(from: storage.base, count: storage.count)
        fresh.count = storage.count
        storage = fresh
    }
}

extension FlatArray where Element == UInt8 {
    mutating func append(contentsOf bytes: UnsafeRawBufferPointer) {
        append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
    }
}

extension FlatArray {
    /// The storage as raw bytes, as far as the capacity goes (what a prefault may touch).
    var reservedRegion: ReplayPrefault.Region {
        ReplayPrefault.Region(base: UnsafeMutableRawPointer(storage.base), capacity: storage.capacity * MemoryLayout<Element>.stride)
    }

    /// Starts loading the element at `position` into the cache without waiting for it (a
    /// software prefetch); `position` must lie within the capacity.
    ///
    ///     buckets.prefetch(start)
    @inline(__always)
    func prefetch(_ position: Int) {
        blobcache_prefetch(storage.base + position)
    }
}
