import Foundation
import SystemPackage
import Testing
@testable import BlobCache

/// Defects a review of the commit path found, each with a test that fails without its fix.
@Suite("Commit-path review defects")
struct ReviewDefectTests {
    @Test("a pack fsync that fails before GC deletes old copies stops the cache until reopen; nothing is lost")
    func failedPackFsyncIsSticky() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem) { $0.packThreshold = 8192; $0.packSegmentLimit = 64 << 10 }
        let values = (0..<60).map { Samples.random(3000, seed: UInt64(500 + $0)) }
        for (n, value) in values.enumerated() { try cache.set(value, forKey: "k\(n)") }
        for n in stride(from: 0, to: 60, by: 3) { try cache.removeValue(forKey: "k\(n)") }
        // Linux may drop the pages a failed fsync could not write and report a later fsync as
        // a success: the relocations that relied on it must never be journaled.
        fileSystem.arm(.init(call: .sync, occurrence: 1, fault: .fail(.ioError), pathSuffix: ".pack"))
        #expect(throws: BlobCacheError.self) { try cache.compact() }
        #expect(fileSystem.fired)
        #expect(throws: BlobCacheError.self) { try cache.set([1], forKey: "after") }
        try? cache.close()
        let reopened = try openCache(dir)
        for (n, value) in values.enumerated() where n % 3 != 0 { #expect(same(try reopened.bytes(forKey: "k\(n)"), value), "k\(n)") }
    }

    @Test("a journal rewrite that fails (ENOSPC) fails neither the operation nor later reads, and is not retried at once")
    func failedCompactionIsBestEffort() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem) { $0.maxStoredBytes = 64 << 10 }
        fileSystem.arm(.init(call: .write, occurrence: 1, fault: .fail(.noSpace), pathSuffix: "journal.tmp"))
        var sets = 0
        while !fileSystem.fired && sets < 20_000 {
            try cache.set(Samples.random(40, seed: UInt64(sets % 5)), forKey: "k\(sets % 7)")
            sets += 1
        }
        #expect(fileSystem.fired, "no journal rewrite after \(sets) sets")
        fileSystem.startTracing()
        for n in 0..<50 {
            #expect(try cache.bytes(forKey: "k\(n % 7)") != nil)
            try cache.set(Samples.random(40, seed: UInt64(n)), forKey: "k\(n % 7)")
        }
        let retries = fileSystem.stopTracing().filter { $0.call == .write && $0.path.hasSuffix("journal.tmp") }
        #expect(retries.isEmpty, "the failed rewrite was retried \(retries.count) times at once")
        #expect(try cache.engine.withState { $0.maintenanceFailures } == 1)
    }

    @Test("staged files a crashed writer left are swept by the next open even when its journal is clean")
    func openSweepsAfterUncleanHolder() throws {
        let dir = TemporaryDirectory()
        let cache = try openCache(dir) { $0.packThreshold = 0 }
        try cache.set(Samples.random(10_000, seed: 1), forKey: "k")
        try cache.close()
        #expect(readFile(dir.appending("lock")).isEmpty, "a clean close empties the lock file")
        // What a writer killed while staging leaves: its pid in the lock file, a staged file
        // in a shard directory, one in objects/ (a large set's), one in packs/, a journal that
        // ends on a whole record.
        writeFile(dir.appending("lock"), Array("999999\n".utf8))
        try FileManager.default.createDirectory(atPath: dir.appending("objects/a/b"), withIntermediateDirectories: true)
        writeFile(dir.appending("objects/a/b/tmp.999999.1a2b.77"), [1, 2, 3])
        writeFile(dir.appending("packs/tmp.999999.1a2b.78"), [4, 5, 6])
        writeFile(dir.appending("objects/tmp.999999.1a2b.79"), [7, 8, 9])
        let reopened = try openCache(dir)
        #expect(reopened.openReport.recovery == .none)
        #expect(!FileManager.default.fileExists(atPath: dir.appending("objects/a/b/tmp.999999.1a2b.77")))
        #expect(!FileManager.default.fileExists(atPath: dir.appending("packs/tmp.999999.1a2b.78")))
        #expect(!FileManager.default.fileExists(atPath: dir.appending("objects/tmp.999999.1a2b.79")))
        #expect(try reopened.bytes(forKey: "k") != nil)
    }

    @Test("GC never copies a record cut short: its entry is dropped and every other record stays in place")
    func evacuationSkipsShortRecords() throws {
        let dir = TemporaryDirectory()
        let values = (0..<60).map { Samples.random(3000, seed: UInt64(700 + $0)) }
        let cache = try openCache(dir) { $0.packThreshold = 8192; $0.packSegmentLimit = 64 << 10 }
        for (n, value) in values.enumerated() { try cache.set(value, forKey: "k\(n)") }
        try cache.close()
        // The first segment loses the second half of its last record (a power cut).
        let first = dir.appending("packs/000001.pack")
        let size = readFile(first).count
        truncateFile(first, to: size - 1500)
        let reopened = try openCache(dir) { $0.packThreshold = 8192; $0.packSegmentLimit = 64 << 10 }
        // Dead records in that segment make compaction collect it.
        for n in 0..<5 { try reopened.removeValue(forKey: "k\(n)") }
        try reopened.compact()
        try reopened.close()
        let report = try BlobCache.check(directory: dir.path)
        #expect(report.findings.filter { $0.severity == .error }.isEmpty, "\(report.findings)")
        let again = try openCache(dir)
        var missing = 0
        for (n, value) in values.enumerated() where n >= 5 {
            if let bytes = try again.bytes(forKey: "k\(n)") { #expect(same(bytes, value), "k\(n)") } else { missing += 1 }
        }
        #expect(missing == 1)
    }

    @Test("a read by id of a damaged blob counts no hit it never counted")
    func readByIdKeepsCounters() throws {
        let dir = TemporaryDirectory()
        let cache = try openCache(dir) { $0.packThreshold = 0 }
        let id = try cache.set(Samples.random(5000), forKey: "k")
        try FileManager.default.removeItem(atPath: looseFile(dir.path, id))
        #expect(throws: BlobCacheError.self) { try cache.bytes(for: id) }
        let counters = try cache.totals().counters
        #expect(counters.hits >= 0 && counters.misses >= 0)
    }
}
