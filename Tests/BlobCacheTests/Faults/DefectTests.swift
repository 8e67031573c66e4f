import Foundation
import SystemPackage
import Testing
@testable import BlobCache

/// One test for each durability defect found, each failing on the code before
/// its fix. The exhaustive fault and power-loss suites cover the same paths among many others;
/// these name the defect and reproduce it directly.
@Suite("Durability defects")
struct DefectTests {
    // MARK: 1. Unlink before the record that makes it safe

    @Test("1: a journal write failing (ENOSPC) while a loose value is replaced keeps the acknowledged old value")
    func failedJournalWriteKeepsReplacedValue() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let old = Samples.random(200_000, seed: 1)
        let cache = try openCache(dir, fileSystem) { $0.packThreshold = 0 }
        try cache.set(old, forKey: "k")
        fileSystem.arm(.init(call: .write, occurrence: 1, fault: .fail(.noSpace), pathSuffix: "/journal"))
        #expect(throws: BlobCacheError.self) { try cache.set(Samples.random(200_000, seed: 2), forKey: "k") }
        #expect(fileSystem.fired)
        try? cache.close()
        let reopened = try openCache(dir)
        #expect(same(try reopened.bytes(forKey: "k"), old))
    }

    @Test("1: a journal write failing during removeAll keeps every file its entries need")
    func failedJournalWriteKeepsClearedValues() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let values = (0..<5).map { Samples.random(50_000, seed: UInt64($0)) }
        let cache = try openCache(dir, fileSystem) { $0.packThreshold = 0 }
        for (n, value) in values.enumerated() { try cache.set(value, forKey: "k\(n)") }
        fileSystem.arm(.init(call: .write, occurrence: 1, fault: .fail(.ioError), pathSuffix: "/journal"))
        #expect(throws: BlobCacheError.self) { try cache.removeAll() }
        try? cache.close()
        let reopened = try openCache(dir)
        for (n, value) in values.enumerated() { #expect(same(try reopened.bytes(forKey: "k\(n)"), value), "k\(n)") }
    }

    // MARK: 2. A stale read failure deletes a freshly re-added blob

    @Test("2: a read that found its blob gone while it was removed and stored again keeps the new copy")
    func staleReadFailureKeepsNewCopy() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let value = Samples.random(100_000, seed: 3)
        let cache = try openCache(dir, fileSystem) { $0.packThreshold = 0 }
        let id = try cache.set(value, forKey: "a")
        let fired = Locked(false)
        let file = looseFile(dir.path, id)
        // The reader holds its ticket for the loose file; just before its open, the last key
        // goes (the file is deleted); just after the open failed, the same bytes are set again.
        fileSystem.interposeOnOpen(before: { path in
            guard path.string == file, fired.withLock({ let first = !$0; $0 = true; return first }) else { return }
            _ = try? cache.removeValue(forKey: "a")
        }, after: { path in
            guard path.string == file, fired.withLock({ $0 }) else { return }
            fileSystem.interposeOnOpen(before: nil, after: nil)
            _ = try? cache.set(value, forKey: "b")
        })
        let read = try cache.bytes(forKey: "a")
        #expect(fired.withLock { $0 })
        #expect(read == nil || same(read, value))
        #expect(same(try cache.bytes(forKey: "b"), value))
        try cache.close()
        #expect(same(try openCache(dir).bytes(forKey: "b"), value))
    }

    // MARK: 3. fsck --repair of a damaged pack segment loses undamaged data

    @Test("3: fsck --repair of a segment with a damaged header keeps every intact record in it", arguments: [true, false])
    func repairKeepsIntactRecordsOfDamagedSegment(newest: Bool) throws {
        let dir = TemporaryDirectory()
        let values = (0..<60).map { Samples.random(3000, seed: UInt64(40 + $0)) }
        let cache = try openCache(dir) { $0.packThreshold = 8192; $0.packSegmentLimit = 64 << 10 }
        for (n, value) in values.enumerated() { try cache.set(value, forKey: "k\(n)") }
        try cache.close()
        let segments = filesBelow(dir.appending("packs"))
        #expect(segments.count >= 3)
        let damaged = newest ? segments.last! : segments.first!
        flipByte(dir.appending("packs/\(damaged)"), at: 0)
        var options = BlobCache.CheckOptions()
        options.repair = true
        let report = try BlobCache.check(directory: dir.path, options: options)
        #expect(report.findings.contains { $0.problem == "pack-corrupt" })
        #expect(report.errorsLeft.isEmpty)
        let reopened = try openCache(dir)
        for (n, value) in values.enumerated() { #expect(same(try reopened.bytes(forKey: "k\(n)"), value), "k\(n)") }
    }

    // MARK: 4. GC and compaction delete durable copies before the new copies are durable

    /// Checks a trace: every unlink of a pack segment or a loose blob comes after an fsync of
    /// every pack segment and of the journal written to before it.
    private func expectCopiesDurableBeforeDeletes(_ trace: [(call: FileSystemCall, path: String)], _ label: String) {
        var unsynced = Set<String>()
        var deletes = 0
        for (call, path) in trace {
            switch call {
            case .write where path.hasSuffix(".pack") || path.hasSuffix("/journal"): unsynced.insert(path)
            case .sync: unsynced.remove(path)
            case .unlink where path.hasSuffix(".pack") || path.contains("/objects/"):
                deletes += 1
                if !unsynced.isEmpty { Issue.record("\(label): \(path) deleted while \(unsynced.sorted()) not fsynced") }
            default: break
            }
        }
        #expect(deletes > 0, "\(label): nothing was deleted")
    }

    @Test("4: compaction whose copies fill several segments fsyncs them all before deleting the old ones")
    func compactionSyncsEveryDestination() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem) { $0.packThreshold = 8192; $0.packSegmentLimit = 64 << 10 }
        for n in 0..<120 { try cache.set(Samples.random(3000, seed: UInt64(n)), forKey: "k\(n)") }
        for n in stride(from: 0, to: 120, by: 4) { try cache.removeValue(forKey: "k\(n)") }
        fileSystem.startTracing()
        try cache.compact()
        expectCopiesDurableBeforeDeletes(fileSystem.stopTracing(), "compact")
        for n in 0..<120 where n % 4 != 0 { #expect(same(try cache.bytes(forKey: "k\(n)"), Samples.random(3000, seed: UInt64(n)))) }
    }

    @Test("4: recompression into packs fsyncs the new records before deleting the loose files")
    func recompressionSyncsBeforeDeletingLoose() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        // Raw (codec none) loose blobs that zlib shrinks below the pack threshold.
        let cache = try openCache(dir, fileSystem) { $0.packThreshold = 8192; $0.codec = .none }
        for n in 0..<10 { try cache.set(Samples.compressible(20_000, seed: UInt64(n)), forKey: "k\(n)") }
        fileSystem.startTracing()
        try cache.compact(recompressingTo: .zlib(level: 6))
        expectCopiesDurableBeforeDeletes(fileSystem.stopTracing(), "recompress")
        #expect(try cache.entries().allSatisfy { if case .packed = $0.place { true } else { false } })
    }

    // MARK: 5. Dead bytes and journal growth not bounded

    @Test("5: evicting to a smaller cap collects the dead pack bytes it leaves")
    func evictionCollectsDeadPackBytes() throws {
        let dir = TemporaryDirectory()
        let cache = try openCache(dir)
        for n in 0..<2000 { try cache.set(Samples.random(4000, seed: UInt64(n)), forKey: "k\(n)") }
        try cache.setLimits(.init(maxStoredBytes: 1 << 20))
        let totals = try cache.totals()
        #expect(totals.storedBytes <= 1 << 20)
        #expect(totals.deadPackBytes <= 1 << 20, "\(totals.deadPackBytes) dead pack bytes left")
        #expect(directoryBytes(dir.appending("packs")) <= 3 << 20)
    }

    @Test("5: a process that only reads keeps the journal within its bound")
    func readOnlyJournalStaysBounded() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) { $0.accessJournalInterval = .zero })
        for n in 0..<100 { try cache.set(Samples.random(100, seed: UInt64(n)), forKey: "key-number-\(n)") }
        // Twice the writers' threshold: a reader leaves the rewrite to writers until then.
        let bound = 2 * (2 * (JournalFormat.headerSize + 100 * (CacheState.setRecordOverhead + 14)) + (1 << 20))
        for round in 0..<150_000 {
            clock.advance(by: .milliseconds(1))
            _ = try cache.bytes(forKey: "key-number-\(round % 100)")
        }
        let totals = try cache.totals()
        #expect(totals.journalBytes <= bound, "\(totals.journalBytes) journal bytes")
        #expect(totals.counters.journalCompactions >= 1)
    }

    @Test("5: a zero-filled journal tail (a power cut) does not size the index for millions of records")
    func zeroTailIsNotCountedAsRecords() throws {
        let zeros = [UInt8](repeating: 0, count: 8 << 20)
        #expect(zeros.withUnsafeBytes { JournalReader.countFrames(records: $0) } == 0)
        let dir = TemporaryDirectory()
        let cache = try openCache(dir)
        try cache.set([1, 2, 3], forKey: "k")
        try cache.close()
        let handle = try #require(FileHandle(forWritingAtPath: dir.appending("journal")))
        handle.seekToEndOfFile()
        handle.write(Data(zeros))
        try handle.close()
        let reopened = try openCache(dir)
        #expect(try reopened.bytes(forKey: "k") == [1, 2, 3])
    }

    // MARK: 6. Temp files

    @Test("6: a set that fails after staging its file leaves no temporary file behind")
    func failedSetLeavesNoTemporary() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem) { $0.packThreshold = 0 }
        // The cache closes between staging (outside the lock) and publishing.
        fileSystem.interposeOnOpen(before: nil, after: { path in
            guard CacheFiles.isStagingName(path.lastComponent ?? "") else { return }
            fileSystem.interposeOnOpen(before: nil, after: nil)
            try? cache.close()
        })
        #expect(throws: BlobCacheError.closed) { try cache.set(Samples.random(10_000), forKey: "k") }
        #expect(filesBelow(dir.appending("objects")).filter { $0.contains("tmp.") }.isEmpty)
    }

    @Test("6: a compaction while a set is staging its file does not delete it")
    func compactionSparesInFlightStagedFile() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem) { $0.packThreshold = 0 }
        let value = Samples.random(10_000, seed: 9)
        // Once the staged file exists (the first open may fail: the shard is not there yet).
        fileSystem.interposeOnOpen(before: nil, after: { path in
            guard CacheFiles.isStagingName(path.lastComponent ?? ""),
                  FileManager.default.fileExists(atPath: path.string) else { return }
            fileSystem.interposeOnOpen(before: nil, after: nil)
            _ = try? cache.compact()
        })
        try cache.set(value, forKey: "k")
        #expect(same(try cache.bytes(forKey: "k"), value))
    }

    @Test("6: temporaries a crashed writer left are swept by the next open that finds a torn journal")
    func openSweepsStaleTemporaries() throws {
        let dir = TemporaryDirectory()
        let cache = try openCache(dir) { $0.packThreshold = 0 }
        try cache.set(Samples.random(10_000, seed: 1), forKey: "k")
        try cache.close()
        let leftover = dir.appending("objects/a/b/tmp.999999.1234")
        try FileManager.default.createDirectory(atPath: dir.appending("objects/a/b"), withIntermediateDirectories: true)
        writeFile(leftover, [1, 2, 3])
        let handle = try #require(FileHandle(forWritingAtPath: dir.appending("journal")))
        handle.seekToEndOfFile()
        handle.write(Data([9, 0, 0]))   // a torn record: the writer died mid-append
        try handle.close()
        let reopened = try openCache(dir)
        #expect(!FileManager.default.fileExists(atPath: leftover))
        #expect(try reopened.bytes(forKey: "k") != nil)
    }

    // MARK: 7. Slow work under the one lock

    @Test("7: under .powerLossSafe a get that journals its access does not fsync")
    func getDoesNotFsync() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem) { $0.durability = .powerLossSafe; $0.accessJournalInterval = .zero }
        try cache.set(Samples.random(1000), forKey: "k")
        fileSystem.startTracing()
        // The first get keeps its access record pending (no lock is needed while no other
        // process wrote); with the interval at zero the second writes both.
        #expect(try cache.bytes(forKey: "k") != nil)
        #expect(try cache.bytes(forKey: "k") != nil)
        let trace = fileSystem.stopTracing()
        #expect(trace.contains { $0.call == .write && $0.path.hasSuffix("/journal") })
        #expect(!trace.contains { $0.call == .sync })
    }

    @Test("7: automatic pack GC keeps the dead bytes within their allowance (an eighth of the live ones) after every set")
    func collectionIsIncremental() throws {
        let dir = TemporaryDirectory()
        let cache = try openCache(dir) { $0.maxStoredBytes = 4 << 20; $0.packSegmentLimit = 64 << 10 }
        var largestRun = 0
        for n in 0..<5000 {
            try cache.set(Samples.random(2000, seed: UInt64(n)), forKey: "k\(n)")
            let (dead, allowance) = try cache.engine.withState { ($0.deadPackBytes, $0.packGarbageAllowance) }
            #expect(dead <= allowance + 64 << 10, "set \(n): \(dead) dead bytes")
            largestRun = max(largestRun, try cache.totals().counters.packCollections)
        }
        #expect(largestRun > 10)
    }

    @Test("7: while a pack collection or a journal rewrite fsyncs, the engine lock is free: a get and a set go through",
          arguments: ["/packs/", "journal.tmp"])
    func maintenanceLeavesTheLockFree(fsyncedPath: String) throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem) {
            $0.maxStoredBytes = 1 << 20
            $0.packSegmentLimit = 64 << 10
            // For the journal, values are loose: no pack collection fsyncs the journal first.
            if fsyncedPath == "journal.tmp" { $0.packThreshold = 0 }
        }
        let probe = Samples.random(500, seed: 1), other = Samples.random(300, seed: 2)
        try cache.set(probe, forKey: "probe")
        // nil until the first fsync of a matching file; then whether the engine lock was free
        // there. The hook runs on the maintaining thread: before the fix it holds the lock at
        // that fsync, so every other thread's get would wait for the whole run.
        let lockWasFree = Locked<Bool?>(nil)
        let probeRead = Locked(false)
        fileSystem.interposeOnSync { path in
            guard path.string.contains(fsyncedPath), lockWasFree.withLock({ $0 == nil }) else { return }
            let free = cache.engine.inspect(waiting: false) { _ in true } != nil
            lockWasFree.withLock { $0 = free }
            guard free else { return }   // a get from here would wait on this very thread
            probeRead.withLock { $0 = (try? cache.bytes(forKey: "probe")) == probe }
            _ = try? cache.set(other, forKey: "other")
        }
        var sets = 0
        while lockWasFree.withLock({ $0 }) == nil && sets < 50_000 {
            try cache.set(Samples.random(2000, seed: UInt64(sets)), forKey: "k\(sets % 40)")
            sets += 1
        }
        fileSystem.interposeOnSync(before: nil)
        #expect(lockWasFree.withLock { $0 } == true, "after \(sets) sets")
        #expect(probeRead.withLock { $0 })
        #expect(same(try cache.bytes(forKey: "other"), other))
        #expect(same(try cache.bytes(forKey: "probe"), probe))
    }

    // MARK: 8. The size cap is not a disk bound for small caps

    @Test("8: the directory stays within 1.25 × the cap + 256 KiB at every step", .disabled(if: underThreadSanitizer, singleThreadedUnderTSan),
          arguments: [64 << 10, 200 << 10, 1 << 20, 64 << 20])
    func directoryStaysWithinCap(cap: Int) throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        var generator = SeededGenerator(seed: UInt64(cap))
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) { $0.maxStoredBytes = cap })
        let bound = cap + cap / 4 + (256 << 10)
        let largest = min(cap / 4, 256 << 10)
        var written = 0, operations = 0, worst = 0
        while written < 2 * cap || operations < 1500 {
            let size = Int(generator.next() % UInt64(largest)) + 1
            let key = "key-\(generator.next() % 3000)"
            switch generator.next() % 10 {
            case 0: _ = try cache.bytes(forKey: key)
            case 1: try cache.removeValue(forKey: key)
            default:
                let value = generator.next() % 2 == 0 ? Samples.random(size, seed: generator.next())
                                                      : Samples.compressible(size, seed: generator.next())
                try cache.set(value, forKey: key)
                written += size
            }
            operations += 1
            clock.advance(by: .seconds(1))
            if cap < 16 << 20 || operations % 50 == 0 {
                let bytes = directoryBytes(dir.path)
                worst = max(worst, bytes)
                if bytes > bound { Issue.record("after \(operations) operations the directory holds \(bytes) bytes > \(bound)"); break }
            }
        }
        try cache.close()
        let closed = directoryBytes(dir.path)
        #expect(closed <= bound, "after close: \(closed) bytes > \(bound)")
        print("disk bound: cap \(cap): at most \(max(worst, closed)) bytes on disk (bound \(bound)), \(operations) operations")
    }
}

/// What `du -sb` counts: the apparent size of every file and directory below `path`, itself included.
func directoryBytes(_ path: String) -> Int {
    var total = 0
    var info = stat()
    if lstat(path, &info) == 0 { total += Int(info.st_size) }
    guard let walker = FileManager.default.enumerator(atPath: path) else { return total }
    while let name = walker.nextObject() as? String {
        if lstat(path + "/" + name, &info) == 0 { total += Int(info.st_size) }
    }
    return total
}
