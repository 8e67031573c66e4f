import Testing
@testable import BlobCache
#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
/// The replay's prefault makes resident only what the replay is about to fill: a few MiB ahead
/// while CRCs are checked, then what its progress predicts, never a region's whole capacity.
@Suite("Replay prefault")
struct ReplayPrefaultTests {
    /// An untouched anonymous mapping of `count` bytes (no page resident yet).
    private final class Mapping {
        let base: UnsafeMutableRawPointer
        let count: Int
        init(_ count: Int) {
            base = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)!
            self.count = count
            // Pages of 4 KiB only, so resident bytes are exactly what was asked for.
            _ = madvise(base, count, Int32(MADV_NOHUGEPAGE))
        }
        deinit { munmap(base, count) }
        var region: ReplayPrefault.Region { .init(base: base, capacity: count) }

        /// Bytes of the mapping in resident pages.
        var residentBytes: Int {
            var pages = [UInt8](repeating: 0, count: count / 4096)
            #expect(mincore(base, count, &pages) == 0)
            return pages.filter { $0 & 1 != 0 }.count * 4096
        }
    }

    @Test("ahead of the fill by the lookahead, then as far as progress predicts, then nothing after finish")
    func touchesOnlyWhatTheReplayFills() {
        let entries = Mapping(64 << 20), blobs = Mapping(64 << 20), keys = Mapping(64 << 20)
        let prefault = ReplayPrefault(entries: entries.region, blobs: blobs.region, keys: keys.region, frames: 1_000)
        prefault.filled(entries: 0, blobs: 0, keys: 0, records: 0)
        prefault.keepAhead()
        for mapping in [entries, blobs, keys] {
            #expect(mapping.residentBytes == ReplayPrefault.lookahead)
        }
        // A tenth of the records filled 1 MiB of entries and blobs and 512 KiB of keys: the
        // rest should need about nine times as much again.
        prefault.filled(entries: 1 << 20, blobs: 1 << 20, keys: 512 << 10, records: 100)
        prefault.prepareTheRest()
        #expect((10 << 20...12 << 20).contains(entries.residentBytes), "\(entries.residentBytes)")
        #expect((10 << 20...12 << 20).contains(blobs.residentBytes), "\(blobs.residentBytes)")
        #expect((5 << 20...7 << 20).contains(keys.residentBytes), "\(keys.residentBytes)")
        prefault.finish()
        prefault.filled(entries: 40 << 20, blobs: 40 << 20, keys: 40 << 20, records: 900)
        prefault.keepAhead()
        prefault.prepareTheRest()
        #expect(entries.residentBytes <= 12 << 20)
    }

    @Test("never past a region's capacity, however much progress predicts")
    func staysWithinCapacity() {
        let mapping = Mapping(16 << 20), other = Mapping(4 << 20)
        // A region of 6 MiB at the start of a 16 MiB mapping: nothing after it may become resident.
        let region = ReplayPrefault.Region(base: mapping.base, capacity: 6 << 20)
        let prefault = ReplayPrefault(entries: region, blobs: other.region, keys: other.region, frames: 1_000_000)
        prefault.filled(entries: 1 << 20, blobs: 0, keys: 0, records: 10)
        prefault.keepAhead()
        prefault.prepareTheRest()
        #expect(mapping.residentBytes == 6 << 20)
        #expect(other.residentBytes == ReplayPrefault.lookahead)
    }
}
#endif
