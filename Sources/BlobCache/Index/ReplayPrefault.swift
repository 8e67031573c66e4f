import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Makes the entries and blobs a replay is filling resident from the other core, a little
/// ahead of the core that fills them. A full replay of the 1 M-entry scale cache spent a third
/// of its applying core's samples in page faults on fresh memory (`perf record -g workload
/// replay-open DIR`); the checking core finishes its CRCs in half the applying core's time,
/// and `MADV_POPULATE_WRITE` takes those faults in bulk. Only `lookahead` bytes past what is
/// filled are touched, so a journal of few entries and many records costs no memory it would
/// not use.
///
/// The two arrays are safe to touch from the other core because, in a replay into an index it
/// sized itself (`CacheIndex.replay`), they only ever grow by appending, within the capacity
/// reserved for one entry and one blob per frame, and are never replaced or copied. The key
/// arena is left out: removing keys compacts it into new storage mid-replay.
final class ReplayPrefault: @unchecked Sendable {
    /// An array the replay appends to: its storage and the bytes it has room for.
    struct Region {
        let base: UnsafeMutableRawPointer
        let capacity: Int
    }

    /// How far past the filled bytes each region is kept resident.
    static let lookahead = 4 << 20
    /// The least made resident at a time.
    static let step = 1 << 20

    private let regions: [Region]
    /// Bytes of each region made resident (touched by the prefaulting core only).
    private var resident: [Int]
    private let filledEntries = Atomic<Int>(0)
    private let filledBlobs = Atomic<Int>(0)
    private let finished = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)

    /// `filled`: the bytes of each region already in use (resident: a replay onto a
    /// restored index has them copied), from which the prefault starts.
    init(entries: Region, blobs: Region, filled: (entries: Int, blobs: Int) = (0, 0)) {
        regions = [entries, blobs]
        resident = [filled.entries, filled.blobs]
        filledEntries.store(filled.entries, ordering: .relaxed)
        filledBlobs.store(filled.blobs, ordering: .relaxed)
    }

    /// The applying core, after each batch: the bytes each region holds, and where its storage
    /// is now. Storage that moved (which a replay into an index it sized never does) ends the
    /// prefault, and fails a debug build.
    func filled(entries: Int, blobs: Int, storage: (entries: UnsafeMutableRawPointer, blobs: UnsafeMutableRawPointer)) {
        guard storage.entries == regions[0].base, storage.blobs == regions[1].base else {
            finish()
            assertionFailure("a replay's entries or blobs moved while the prefault touched them")
            return
        }
        filledEntries.store(entries, ordering: .relaxed)
        filledBlobs.store(blobs, ordering: .relaxed)
    }

    /// The applying core has begun, on a thread of its own.
    func start() { started.store(true, ordering: .relaxed) }

    /// The applying core is done: nothing more is made resident.
    func finish() { finished.store(true, ordering: .relaxed) }

    /// Keeps each region resident `lookahead` bytes past what is filled; returns whether it
    /// made anything resident (called between CRC checks).
    @discardableResult
    func keepAhead() -> Bool {
        let entries = populate(0, upTo: filledEntries.load(ordering: .relaxed) + Self.lookahead)
        let blobs = populate(1, upTo: filledBlobs.load(ordering: .relaxed) + Self.lookahead)
        return entries || blobs
    }

    /// `keepAhead` until the applying core finishes (once CRCs are checked), giving the core
    /// up whenever it is far enough ahead. Returns at once if the applying core has not begun:
    /// both halves of a replay may be run one after the other on one thread
    /// (`concurrentPerform` with no other thread free), and this one must not wait for the
    /// other. Returns too once nothing is left to make resident (the regions are, or the
    /// kernel cannot), rather than spin for nothing.
    func followUntilFinished() {
        guard started.load(ordering: .relaxed) else { return }
        while !finished.load(ordering: .relaxed) && !isExhausted {
            if !keepAhead() { Parallel.yield() }
        }
    }

    /// Whether no region has a whole `step` left to make resident.
    var isExhausted: Bool {
        regions.indices.allSatisfy { regions[$0].capacity - resident[$0] < Self.step }
    }

    /// Makes region `index` resident up to `wanted` bytes (at most its capacity), a `step` or
    /// more at a time; returns whether it did any.
    private func populate(_ index: Int, upTo wanted: Int) -> Bool {
        let region = regions[index]
        let end = min(wanted, region.capacity)
        var worked = false
        while end - resident[index] >= Self.step, !finished.load(ordering: .relaxed) {
            let next = min(end, resident[index] + 4 * Self.step)
            guard Self.makeResident(region.base + resident[index], count: next - resident[index]) else {
                resident[index] = region.capacity   // not supported here: stop trying
                return worked
            }
            resident[index] = next
            worked = true
        }
        return worked
    }

    #if os(Linux)
    private static let pageSize = max(1, sysconf(Int32(_SC_PAGESIZE)))
    #endif

    /// Faults in the whole pages within `count` bytes at `start`; `false` when the kernel
    /// cannot (before Linux 5.14, or not Linux).
    static func makeResident(_ start: UnsafeMutableRawPointer, count: Int) -> Bool {
        #if os(Linux)
        let first = (Int(bitPattern: start) + pageSize - 1) / pageSize * pageSize
        let last = (Int(bitPattern: start) + count) / pageSize * pageSize
        guard last > first else { return true }
        return madvise(UnsafeMutableRawPointer(bitPattern: first), last - first, 23 /* MADV_POPULATE_WRITE */) == 0
        #else
        return false
        #endif
    }
}
