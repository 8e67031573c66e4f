import Foundation
import SystemPackage
import Testing
@testable import BlobCache

/// Checkpoints: the index snapshot written by maintenance while a cache is in use, so that the
/// first open after a crash restores it and replays only the journal written after it.
@Suite("Checkpoints")
struct CheckpointTests {
    /// A cache on `fileSystem` whose checkpoints start at 16 KiB of journal past the snapshot.
    private func open(_ dir: TemporaryDirectory, _ fileSystem: FaultyFileSystem, clock: ManualClock) throws -> BlobCache {
        try BlobCache(directory: dir.path, configuration: .testing(clock: clock) {
            $0.fileSystem = fileSystem
            $0.checkpointMinimum = 16 << 10
        })
    }

    private func value(_ n: Int) -> [UInt8] { Samples.random(60 + n % 40, seed: UInt64(n)) }

    private func journalSize(_ dir: TemporaryDirectory) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: dir.appending("journal"))[.size] as? Int) ?? 0
    }

    /// Sets `key-count`, `key-(count + 1)`, … (each to its `value`) while `condition` holds, and
    /// fails the test once `limit` keys are set.
    private func setKeys(_ cache: BlobCache, from count: inout Int, limit: Int = 2_000, while condition: () -> Bool,
                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        while condition() {
            try cache.set(value(count), forKey: "key-\(count)")
            count += 1
            try #require(count < limit, "still going after \(limit) keys", sourceLocation: sourceLocation)
        }
    }

    /// A cache whose first checkpoint fails (ENOSPC creating `index.tmp`), its file system, and
    /// the count of checkpoints tried.
    private func cacheWhoseFirstCheckpointFails(_ dir: TemporaryDirectory) throws -> (BlobCache, FaultyFileSystem, Locked<Int>) {
        let fileSystem = FaultyFileSystem()
        let attempts = countCheckpointAttempts(on: fileSystem)
        let cache = try open(dir, fileSystem, clock: ManualClock())
        fileSystem.arm(.init(call: .open, occurrence: 1, fault: .fail(.noSpace), pathSuffix: "/index.tmp"))
        return (cache, fileSystem, attempts)
    }

    private func hasSnapshot(_ dir: TemporaryDirectory) -> Bool { FileManager.default.fileExists(atPath: dir.appending("index")) }

    private func expectFsckFindsNoError(_ dir: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation) throws {
        var options = BlobCache.CheckOptions()
        options.lockTimeout = nil
        let report = try BlobCache.check(directory: dir.path, options: options)
        #expect(report.errors.isEmpty, "\(report.errors)", sourceLocation: sourceLocation)
    }

    /// Counts the snapshot files opened for writing (`index.tmp`): checkpoints tried.
    private func countCheckpointAttempts(on fileSystem: FaultyFileSystem) -> Locked<Int> {
        let attempts = Locked(0)
        fileSystem.interposeOnOpen(before: { path in
            if path.string.hasSuffix("/index.tmp") { attempts.withLock { $0 += 1 } }
        }, after: nil)
        return attempts
    }

    /// Records the journal's size each time a snapshot is renamed into place.
    private func recordCheckpoints(on fileSystem: FaultyFileSystem, in dir: TemporaryDirectory) -> Locked<[Int]> {
        let journalSizes = Locked<[Int]>([])
        let journal = dir.appending("journal")
        fileSystem.interposeOnRename(before: { _, to in
            guard to.string.hasSuffix("/index") else { return }
            let size = (try? FileManager.default.attributesOfItem(atPath: journal)[.size] as? Int) ?? 0
            journalSizes.withLock { $0.append(size) }
        })
        return journalSizes
    }

    /// Crashes `cache` (every later call of its file system fails, so its close writes nothing).
    private func crash(_ cache: inout BlobCache?, _ fileSystem: FaultyFileSystem) {
        fileSystem.crashNow()
        try? cache?.close()
        cache = nil
    }

    @Test("a cache in use writes a checkpoint once its journal passes the threshold; the open after a crash restores it and replays only the rest")
    func crashReplaysOnlyTheTail() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let clock = ManualClock()
        var cache: BlobCache? = try open(dir, fileSystem, clock: clock)
        var count = 0
        // Below 16 KiB of journal: no snapshot while the cache is open.
        try setKeys(cache!, from: &count) { journalSize(dir) < 8 << 10 }
        #expect(!hasSnapshot(dir))
        // Past it: a checkpoint, then a tail of sets after it.
        try setKeys(cache!, from: &count) { !hasSnapshot(dir) }
        let covered = count
        for _ in 0..<20 {
            try cache!.set(value(count), forKey: "key-\(count)")
            count += 1
        }
        crash(&cache, fileSystem)

        let reopened = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        defer { try? reopened.close() }
        #expect(reopened.openReport.restoredFromSnapshot)
        #expect(reopened.openReport.replayedRecords == count - covered)
        #expect(try reopened.totals().entries == count)
        for n in [0, covered - 1, covered, count - 1] { #expect(try reopened.bytes(forKey: "key-\(n)") == value(n)) }
    }

    @Test("a checkpoint journals the recency the journal lacks first: fsck finds the snapshot equal to a replay, and the LRU order survives the crash")
    func checkpointMatchesTheJournal() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let clock = ManualClock()
        var cache: BlobCache? = try open(dir, fileSystem, clock: clock)
        var count = 0
        try setKeys(cache!, from: &count) { journalSize(dir) < 12 << 10 }
        // Reads within `accessJournalInterval` of the sets move entries without a record.
        clock.advance(by: .seconds(1))
        for n in stride(from: 0, to: count, by: 3) { #expect(try cache!.bytes(forKey: "key-\(n)") == value(n)) }
        try setKeys(cache!, from: &count) { !hasSnapshot(dir) }
        let order = try cache!.keys()
        crash(&cache, fileSystem)

        try expectFsckFindsNoError(dir)
        let reopened = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        defer { try? reopened.close() }
        #expect(reopened.openReport.restoredFromSnapshot)
        #expect(try reopened.keys() == order)
    }

    @Test("checkpoints taken while other threads set and read: every value reads back, and fsck finds the last snapshot equal to a replay")
    func checkpointsAmidThreads() async throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let clock = ManualClock()
        var cache: BlobCache? = try open(dir, fileSystem, clock: clock)
        let shared = cache!
        let writes = Locked(0)
        fileSystem.interposeOnRename(before: { _, to in
            if to.string.hasSuffix("/index") { writes.withLock { $0 += 1 } }
        })
        // Four threads, each its own keys: the index is copied for each checkpoint while the
        // others change it (the copy's arrays are copied on their next change).
        try await withThrowingTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    for n in stride(from: thread, to: 2_400, by: 4) {
                        try shared.set(self.value(n), forKey: "key-\(n)")
                        // One of this thread's own earlier keys (`n - 40` has the same thread).
                        if n % 5 == 0, n >= 40 { #expect(try shared.bytes(forKey: "key-\(n - 40)") == self.value(n - 40)) }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(writes.withLock { $0 } >= 2, "checkpoints written: \(writes.withLock { $0 })")
        for n in 0..<2_400 { #expect(try shared.bytes(forKey: "key-\(n)") == value(n)) }
        crash(&cache, fileSystem)

        try expectFsckFindsNoError(dir)
        let reopened = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        defer { try? reopened.close() }
        #expect(reopened.openReport.restoredFromSnapshot)
        #expect(try reopened.totals().entries == 2_400)
    }

    @Test("a failed checkpoint's backoff ends with its journal: after a rewrite the next one is tried at once (review finding)")
    func backoffEndsWithTheJournal() throws {
        let dir = TemporaryDirectory()
        let (cache, _, attempts) = try cacheWhoseFirstCheckpointFails(dir)
        var count = 0
        try setKeys(cache, from: &count) { attempts.withLock { $0 } == 0 }
        // The rewritten journal is shorter than the failed one's backoff, and holds more than
        // a threshold (16 KiB) of records with no snapshot: a checkpoint is due again.
        _ = try cache.engine.directoryLock.withExclusive { try cache.engine.rewriteJournal() }
        #expect(journalSize(dir) >= 16 << 10)
        try cache.set(value(count), forKey: "key-\(count)")
        #expect(attempts.withLock { $0 } == 2)
        #expect(hasSnapshot(dir))
        try cache.close()
    }

    @Test("two opens sharing a directory write one checkpoint per threshold of growth between them, not one each (review finding)")
    func opensShareCheckpoints() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let clock = ManualClock()
        let journalSizes = recordCheckpoints(on: fileSystem, in: dir)
        let first = try open(dir, fileSystem, clock: clock)
        let second = try open(dir, fileSystem, clock: clock)
        var count = 0
        while journalSizes.withLock({ $0.count }) < 4 {
            try (count % 2 == 0 ? first : second).set(value(count), forKey: "key-\(count)")
            count += 1
            try #require(count < 4_000, "fewer than four checkpoints")
        }
        let sizes = journalSizes.withLock { $0 }
        for (earlier, later) in zip(sizes, sizes.dropFirst()) {
            #expect(later - earlier >= 16 << 10, "checkpoints at journal sizes \(sizes)")
        }
        try first.close()
        try second.close()
    }

    @Test("no checkpoint within half a threshold of a journal rewrite, which deletes the snapshot (review finding)",
          arguments: [100, 120, 140, 160, 180])
    func noCheckpointJustBeforeARewrite(keys: Int) throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let clock = ManualClock()
        let journalSizes = recordCheckpoints(on: fileSystem, in: dir)
        let cache = try open(dir, fileSystem, clock: clock)
        // `keys` keys set again and again: the journal grows, its compacted size does not.
        // (Each count puts the checkpoints at other distances from the rewrite.)
        var rewrites = 0, last = 0, count = 0
        while rewrites < 2 {
            try cache.set(value(count), forKey: "key-\(count % keys)")
            let size = journalSize(dir)
            if size < last { rewrites += 1 }
            last = size
            count += 1
            try #require(count < 200_000, "the journal was not rewritten")
        }
        let threshold = try cache.engine.withState { Int($0.journalRewriteThreshold) }
        let sizes = journalSizes.withLock { $0 }
        #expect(sizes.count > 8)
        for size in sizes { #expect(size + (8 << 10) <= threshold, "a checkpoint at \(size), the rewrite at \(threshold)") }
        try cache.close()
    }

    @Test("a journal that fails while a checkpoint is written outside the lock takes the snapshot with it (review finding)")
    func journalFailureTakesTheSnapshot() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let clock = ManualClock()
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) {
            $0.fileSystem = fileSystem
            $0.checkpointMinimum = 16 << 10
            $0.durability = .powerLossSafe   // every set fsyncs the journal
        })
        // Just before the snapshot is renamed into place, a set's journal fsync fails (as when
        // another thread's fsync was told of a writeback error this checkpoint's fsync covered).
        let failedSet = Locked<Bool?>(nil)
        fileSystem.interposeOnRename(before: { _, to in
            guard to.string.hasSuffix("/index"), failedSet.withLock({ $0 }) == nil else { return }
            fileSystem.arm(.init(call: .sync, occurrence: 1, fault: .fail(.ioError), pathSuffix: "/journal"))
            let failed = (try? cache.set([1, 2, 3], forKey: "during")) == nil
            failedSet.withLock { $0 = failed }
        })
        // The hook holds the cache, which holds the file system, which holds the hook.
        defer { fileSystem.interposeOnRename(before: nil) }
        var count = 0
        try setKeys(cache, from: &count) { failedSet.withLock { $0 } == nil }
        #expect(failedSet.withLock { $0 } == true)
        #expect(!hasSnapshot(dir))
        try? cache.close()
        let reopened = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        defer { try? reopened.close() }
        #expect(!reopened.openReport.restoredFromSnapshot)
        #expect(try reopened.bytes(forKey: "key-0") == value(0))
    }

    @Test("a checkpoint that fails leaves the cache working, and is not tried again until the journal has grown by the threshold")
    func failedCheckpointBacksOff() throws {
        let dir = TemporaryDirectory()
        let (cache, fileSystem, attempts) = try cacheWhoseFirstCheckpointFails(dir)
        var count = 0
        try setKeys(cache, from: &count) { attempts.withLock { $0 } == 0 }
        #expect(fileSystem.fired)
        #expect(!hasSnapshot(dir))
        // The next 16 KiB of journal: no second attempt.
        let failedAt = journalSize(dir)
        try setKeys(cache, from: &count) { journalSize(dir) < failedAt + (15 << 10) }
        #expect(attempts.withLock { $0 } == 1)
        // Then one, which succeeds.
        try setKeys(cache, from: &count, limit: 4_000) { !hasSnapshot(dir) }
        #expect(attempts.withLock { $0 } == 2)
        for n in [0, count / 2, count - 1] { #expect(try cache.bytes(forKey: "key-\(n)") == value(n)) }
        try cache.close()
    }
}
