import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Makes the memory a replay is filling resident from the other core, a little ahead of the
/// core that fills it. A full replay of the 1 M-entry scale cache spent a third of its
/// applying core's samples in page faults on fresh entries, blobs and key bytes
/// (`perf record -g workload replay-open DIR`); the checking core has time to spare once its
/// CRCs are done, and `MADV_POPULATE_WRITE` takes those faults in bulk. Only what the
/// replay will fill is touched: a few MiB past what it has filled while CRCs are checked,
/// then up to the sizes its progress so far predicts for the whole journal.
final class ReplayPrefault: @unchecked Sendable {
    /// An array the replay appends to: its storage and the bytes it has room for.
    struct Region {
        let base: UnsafeMutableRawPointer
        let capacity: Int
    }

    /// How far past the filled bytes the regions are kept resident while CRCs are checked.
    static let lookahead = 4 << 20
    /// The least made resident at a time.
    static let step = 1 << 20

    private let regions: [Region]
    private let frames: Int
    /// Bytes of each region made resident (touched by the prefaulting core only).
    private var resident: [Int]
    private let filledEntries = Atomic<Int>(0)
    private let filledBlobs = Atomic<Int>(0)
    private let filledKeys = Atomic<Int>(0)
    private let appliedRecords = Atomic<Int>(0)
    private let finished = Atomic<Bool>(false)

    /// Regions `entries`, `blobs` and `keys`, in that order, filled by replaying `frames` frames.
    init(entries: Region, blobs: Region, keys: Region, frames: Int) {
        regions = [entries, blobs, keys]
        resident = [0, 0, 0]
        self.frames = frames
    }

    /// The applying core, after each batch: the bytes each region holds and the records applied.
    func filled(entries: Int, blobs: Int, keys: Int, records: Int) {
        filledEntries.store(entries, ordering: .relaxed)
        filledBlobs.store(blobs, ordering: .relaxed)
        filledKeys.store(keys, ordering: .relaxed)
        appliedRecords.store(records, ordering: .relaxed)
    }

    /// The applying core is done: nothing more is made resident.
    func finish() { finished.store(true, ordering: .relaxed) }

    /// Keeps each region resident `lookahead` bytes past what is filled (called between CRC checks).
    func keepAhead() {
        let filled = [filledEntries.load(ordering: .relaxed), filledBlobs.load(ordering: .relaxed),
                      filledKeys.load(ordering: .relaxed)]
        for index in regions.indices { populate(index, upTo: filled[index] + Self.lookahead) }
    }

    /// Makes resident what the whole replay will fill at the rate it has filled so far (called
    /// once CRCs are checked), stopping early when the applying core finishes.
    func prepareTheRest() {
        let records = appliedRecords.load(ordering: .relaxed)
        guard records > 0 else { return }
        let filled = [filledEntries.load(ordering: .relaxed), filledBlobs.load(ordering: .relaxed),
                      filledKeys.load(ordering: .relaxed)]
        for index in regions.indices {
            let predicted = filled[index] + filled[index] / records * max(0, frames - records) + Self.step
            populate(index, upTo: predicted)
        }
    }

    private func populate(_ index: Int, upTo wanted: Int) {
        let region = regions[index]
        let end = min(wanted, region.capacity)
        while end - resident[index] >= Self.step, !finished.load(ordering: .relaxed) {
            let next = min(end, resident[index] + 4 * Self.step)
            guard Self.makeResident(region.base + resident[index], count: next - resident[index]) else {
                resident[index] = region.capacity   // not supported here: stop trying
                return
            }
            resident[index] = next
        }
    }

    /// Faults in the whole pages within `count` bytes at `start`; `false` when the kernel
    /// cannot (before Linux 5.14, or not Linux).
    private static func makeResident(_ start: UnsafeMutableRawPointer, count: Int) -> Bool {
        #if os(Linux)
        let page = 4096
        let first = (Int(bitPattern: start) + page - 1) & ~(page - 1)
        let last = (Int(bitPattern: start) + count) & ~(page - 1)
        guard last > first else { return true }
        return madvise(UnsafeMutableRawPointer(bitPattern: first), last - first, 23 /* MADV_POPULATE_WRITE */) == 0
        #else
        return false
        #endif
    }
}
