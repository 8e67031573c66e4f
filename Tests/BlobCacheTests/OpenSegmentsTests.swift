import SystemPackage
import Testing
@testable import BlobCache

@Suite("Open segments")
struct OpenSegmentsTests {
    /// Segment `number`, over a descriptor of /dev/null and without a mapping.
    private func segment(_ number: UInt32) throws -> PackSegment {
        let io = FileIO(PosixFileSystem())
        return PackSegment(number: number, path: CachePath(normalizing: "/dev/null"),
                           descriptor: try FileDescriptor.open("/dev/null", .readOnly), mappedLength: 0, io: io)
    }

    @Test("when full, keeping another segment closes the least recently used one, never the one kept")
    func closesTheLeastRecentlyUsed() throws {
        var open = OpenSegments(capacity: 3)
        for number: UInt32 in [30, 10, 20] { open.keep(try segment(number)) }
        // Used order now: 30, 20, 10 (10 was kept second but used last).
        #expect(open.segment(30)?.number == 30)
        #expect(open.segment(20)?.number == 20)
        #expect(open.segment(10)?.number == 10)
        open.keep(try segment(40))
        #expect(open.numbers == [10, 20, 40])
        #expect(open.peek(30) == nil && open.segment(30) == nil)
        // Peeking does not count as a use: 20 is still the oldest after 40 and 10 are used.
        _ = open.segment(40)
        _ = open.segment(10)
        _ = open.peek(20)
        open.keep(try segment(5))
        #expect(open.numbers == [5, 10, 40])
        // Keeping a segment that is open replaces it and closes nothing.
        open.keep(try segment(10))
        #expect(open.numbers == [5, 10, 40] && open.count == 3)
        open.close(5)
        #expect(open.numbers == [10, 40])
    }
}
