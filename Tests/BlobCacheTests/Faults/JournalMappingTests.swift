import Foundation
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import BlobCache

/// The open maps a journal of 1 MiB and more instead of reading it into fresh memory, and reads it after all when it cannot be mapped.
@Suite("Journal mapped for replay")
struct JournalMappingTests {
    private static let count = 12_000

    /// A closed cache whose journal holds `count` sets (over 1 MiB) and has no snapshot, so the
    /// next open replays all of it.
    private static func cacheWithLongJournal() throws -> TemporaryDirectory {
        let dir = TemporaryDirectory()
        let cache = try openCache(dir)
        try fill(cache, 0..<count)
        try cache.close()
        try? FileManager.default.removeItem(atPath: dir.path + "/index")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: dir.path + "/journal")[.size] as? Int)
        #expect(size >= CacheIndex.parallelReplayBytes)
        return dir
    }

    private static func fill(_ cache: BlobCache, _ keys: Range<Int>) throws {
        for n in keys { try cache.set(Array("value \(n)".utf8), forKey: "key-\(n)") }
    }

    /// Whether the open traced by `fileSystem` mapped the journal.
    private static func mappedJournal(_ trace: [(call: FileSystemCall, path: String)]) -> Bool {
        trace.contains { $0.call == .map && $0.path.hasSuffix("/journal") }
    }

    private static func expectEveryValue(_ cache: BlobCache, count: Int = count) throws {
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
        #expect(Self.mappedJournal(trace))
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

    // After the first helper review: the mapped path from an offset, encrypted, and sparse.

    @Test("after a snapshot, a tail of 1 MiB and more is mapped from where the snapshot ends")
    func tailAfterSnapshotIsMapped() throws {
        let dir = TemporaryDirectory()
        let first = try openCache(dir) { $0.snapshotThreshold = 0 }
        try Self.fill(first, 0..<100)
        try first.close()
        let second = try openCache(dir) { $0.snapshotThreshold = .max }
        try Self.fill(second, 100..<(100 + Self.count))
        try second.close()
        let fileSystem = FaultyFileSystem()
        fileSystem.startTracing()
        let cache = try openCache(dir, fileSystem)
        #expect(Self.mappedJournal(fileSystem.stopTracing()))
        #expect(cache.openReport.restoredFromSnapshot)
        #expect((Self.count..<(Self.count + 100)).contains(cache.openReport.replayedRecords))
        try Self.expectEveryValue(cache, count: Self.count + 100)
        try cache.close()
    }

    @Test("an encrypted journal is mapped and replayed as a plain one is")
    func encryptedJournalIsMapped() throws {
        let dir = TemporaryDirectory()
        let cache = try openCache(dir) { $0.encryption = .aesGCM(key: testKey) }
        try Self.fill(cache, 0..<Self.count)
        try cache.close()
        try FileManager.default.removeItem(atPath: dir.path + "/index")
        let fileSystem = FaultyFileSystem()
        fileSystem.startTracing()
        let reopened = try openCache(dir, fileSystem) { $0.encryption = .aesGCM(key: testKey) }
        #expect(Self.mappedJournal(fileSystem.stopTracing()))
        #expect(reopened.openReport.replayedRecords >= Self.count)
        try Self.expectEveryValue(reopened)
        try reopened.close()
    }

    @Test("a journal grown sparse to 200 MiB is mapped, cut where its zeros begin, and loses nothing")
    func sparseJournal() throws {
        let dir = TemporaryDirectory()
        let cache = try openCache(dir)
        try Self.fill(cache, 0..<100)
        try cache.close()
        try? FileManager.default.removeItem(atPath: dir.path + "/index")
        #expect(truncate(dir.path + "/journal", 200 << 20) == 0)
        let fileSystem = FaultyFileSystem()
        fileSystem.startTracing()
        let reopened = try openCache(dir, fileSystem)
        #expect(Self.mappedJournal(fileSystem.stopTracing()))
        guard case .stoppedAtCorruption = reopened.openReport.recovery else {
            Issue.record("recovery: \(reopened.openReport.recovery)")
            return
        }
        try Self.expectEveryValue(reopened, count: 100)
        try reopened.close()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: dir.path + "/journal")[.size] as? Int)
        #expect(size < 1 << 20)
    }
}
