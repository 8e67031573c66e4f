import Foundation
import SystemPackage
import Testing
@testable import BlobCache

/// The open maps a journal of 1 MiB and more instead of reading it into fresh memory (issue 15,
/// target 7), and reads it after all when it cannot be mapped.
@Suite("Journal mapped for replay")
struct JournalMappingTests {
    private static let count = 12_000

    /// A closed cache whose journal holds `count` sets (over 1 MiB) and has no snapshot, so the
    /// next open replays all of it.
    private static func cacheWithLongJournal() throws -> TemporaryDirectory {
        let dir = TemporaryDirectory()
        let cache = try openCache(dir)
        for n in 0..<count { try cache.set(Array("value \(n)".utf8), forKey: "key-\(n)") }
        try cache.close()
        try? FileManager.default.removeItem(atPath: dir.path + "/index")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: dir.path + "/journal")[.size] as? Int)
        #expect(size >= CacheIndex.parallelReplayBytes)
        return dir
    }

    private static func expectEveryValue(_ cache: BlobCache) throws {
        #expect(try cache.totals().entries == count)
        for n in stride(from: 0, to: count, by: 997) {
            #expect(same(try cache.bytes(forKey: "key-\(n)"), Array("value \(n)".utf8)), "key-\(n)")
        }
    }

    @Test("an open maps a long journal and replays every record of it")
    func longJournalIsMapped() throws {
        let dir = try Self.cacheWithLongJournal()
        let fileSystem = FaultyFileSystem()
        fileSystem.startTracing()
        let cache = try openCache(dir, fileSystem)
        let trace = fileSystem.stopTracing()
        #expect(trace.contains { $0.call == .map && $0.path.hasSuffix("/journal") })
        #expect(cache.openReport.replayedRecords >= Self.count)
        try Self.expectEveryValue(cache)
        try cache.close()
    }

    @Test("a journal that cannot be mapped is read instead", arguments: [Errno.operationNotSupportedByDevice, Errno.noMemory])
    func unmappableJournalIsRead(errno: Errno) throws {
        let dir = try Self.cacheWithLongJournal()
        let fileSystem = FaultyFileSystem()
        fileSystem.arm(.init(call: .map, occurrence: 1, fault: .fail(errno), pathSuffix: "/journal"))
        let cache = try openCache(dir, fileSystem)
        #expect(fileSystem.fired)
        #expect(cache.openReport.replayedRecords >= Self.count)
        #expect(cache.openReport.recovery == .none)
        try Self.expectEveryValue(cache)
        try cache.close()
    }
}
