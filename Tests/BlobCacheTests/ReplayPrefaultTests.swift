import Foundation
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

    @Test("following a running applier keeps the lookahead as it fills, and stops when it finishes; not started, it returns at once")
    func followsARunningApplier() throws {
        let entries = try #require(Mapping(64 << 20)), blobs = try #require(Mapping(64 << 20))
        let prefault = ReplayPrefault(entries: entries.region, blobs: blobs.region)
        // Both halves of a replay may run on one thread, this one first: it must not wait.
        prefault.followUntilFinished()
        #expect(entries.residentBytes == 0)
        prefault.start()
        let done = DispatchSemaphore(value: 0)
        Thread {
            prefault.followUntilFinished()
            done.signal()
        }.start()
        Self.filled(prefault, (entries, 10 << 20), (blobs, 2 << 20))
        while entries.residentBytes < (10 << 20) + ReplayPrefault.lookahead || blobs.residentBytes < (2 << 20) + ReplayPrefault.lookahead {
            sched_yield()   // until the follower has caught up with what was filled
        }
        prefault.finish()
        done.wait()
        #expect(entries.residentBytes == (10 << 20) + ReplayPrefault.lookahead)
        #expect(blobs.residentBytes == (2 << 20) + ReplayPrefault.lookahead)
    }

    @Test("following stops once every region is resident, though the applier is still running")
    func followingStopsWhenNothingIsLeft() throws {
        let entries = try #require(Mapping(2 << 20)), blobs = try #require(Mapping(3 << 20))
        let prefault = ReplayPrefault(entries: entries.region, blobs: blobs.region)
        prefault.start()
        Self.filled(prefault, (entries, 1 << 20), (blobs, 1 << 20))
        prefault.followUntilFinished()   // spun until the applier finished, before
        #expect(prefault.isExhausted)
        #expect(entries.residentBytes == 2 << 20)
        #expect(blobs.residentBytes == 3 << 20)
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
