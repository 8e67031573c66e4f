import Testing
@testable import BlobCache
#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
private let page = sysconf(Int32(_SC_PAGESIZE))

/// An untouched anonymous mapping of `count` bytes (no page resident yet), in pages of the
/// system's size only (no huge pages), so resident bytes are exactly what was asked for.
private final class Mapping {
    let base: UnsafeMutableRawPointer
    let count: Int
    init?(_ count: Int) {
        guard let base = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              base != MAP_FAILED else { return nil }
        self.base = base
        self.count = count
        _ = madvise(base, count, Int32(MADV_NOHUGEPAGE))
    }
    deinit { munmap(base, count) }
    var region: ReplayPrefault.Region { .init(base: base, capacity: count) }

    /// Bytes of the mapping in resident pages.
    var residentBytes: Int {
        var pages = [UInt8](repeating: 0, count: (count + page - 1) / page)
        #expect(mincore(base, count, &pages) == 0)
        return pages.filter { $0 & 1 != 0 }.count * page
    }
}

/// Whether this kernel takes `MADV_POPULATE_WRITE`.
private let kernelPopulates: Bool = {
    guard let probe = Mapping(Int(page)) else { return false }
    return ReplayPrefault.makeResident(probe.base, count: probe.count)
}()

/// The replay's prefault makes resident only what the replay is about to fill: `lookahead`
/// bytes past what is filled, never past a region's capacity, nothing once the replay is done.
@Suite("Replay prefault", .enabled(if: kernelPopulates, "MADV_POPULATE_WRITE needs Linux 5.14"))
struct ReplayPrefaultTests {
    private static func filled(_ prefault: ReplayPrefault, _ entries: (Mapping, Int), _ blobs: (Mapping, Int)) {
        prefault.filled(entries: entries.1, blobs: blobs.1, storage: (entries.0.base, blobs.0.base))
    }

    @Test("each region is kept a lookahead past what is filled, and nothing more once the replay is done")
    func staysALookaheadAhead() throws {
        let entries = try #require(Mapping(64 << 20)), blobs = try #require(Mapping(64 << 20))
        let prefault = ReplayPrefault(entries: entries.region, blobs: blobs.region)
        prefault.keepAhead()
        #expect(entries.residentBytes == ReplayPrefault.lookahead)
        #expect(blobs.residentBytes == ReplayPrefault.lookahead)
        Self.filled(prefault, (entries, 10 << 20), (blobs, 2 << 20))
        prefault.keepAhead()
        #expect(entries.residentBytes == (10 << 20) + ReplayPrefault.lookahead)
        #expect(blobs.residentBytes == (2 << 20) + ReplayPrefault.lookahead)
        prefault.finish()
        Self.filled(prefault, (entries, 40 << 20), (blobs, 40 << 20))
        prefault.keepAhead()
        prefault.followUntilFinished()
        #expect(entries.residentBytes == (10 << 20) + ReplayPrefault.lookahead)
    }

    @Test("following the applying core returns at once when it has not begun: both halves of a replay may run on one thread, one after the other",
          .timeLimit(.minutes(1)))
    func followingNeverWaitsForAnApplierNotRunning() throws {
        let entries = try #require(Mapping(16 << 20)), blobs = try #require(Mapping(16 << 20))
        let prefault = ReplayPrefault(entries: entries.region, blobs: blobs.region)
        prefault.followUntilFinished()   // hung here, and so did ReplayTests, before `start()`
        prefault.start()
        Self.filled(prefault, (entries, 4 << 20), (blobs, 0))
        prefault.finish()
        prefault.followUntilFinished()
        #expect(entries.residentBytes <= (4 << 20) + ReplayPrefault.lookahead)
    }

    @Test("never past a region's capacity")
    func staysWithinCapacity() throws {
        // A region of 6 MiB at the start of a 16 MiB mapping: nothing after it may become resident.
        let mapping = try #require(Mapping(16 << 20)), other = try #require(Mapping(8 << 20))
        let prefault = ReplayPrefault(entries: ReplayPrefault.Region(base: mapping.base, capacity: 6 << 20), blobs: other.region)
        Self.filled(prefault, (mapping, 5 << 20), (other, 0))
        prefault.keepAhead()
        #expect(mapping.residentBytes == 6 << 20)
        #expect(other.residentBytes == ReplayPrefault.lookahead)
    }
}
#endif
