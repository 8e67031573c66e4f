import Crypto
import Foundation
import Testing
@testable import BlobCache

/// An open that maps its snapshot and answers the first gets from it, restoring the index only
/// when an operation needs it (`CacheState+DeferredRestore`).
@Suite("Deferred snapshot restore")
struct DeferredRestoreTests {
    private static func value(_ n: Int) -> [UInt8] { Samples.random(200 + n % 90, seed: UInt64(n)) }

    /// 600 entries (a few expiring in an hour, a few pinned), closed with a snapshot written.
    private func populate(_ dir: TemporaryDirectory, clock: ManualClock) throws {
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) { $0.snapshotThreshold = 0 })
        for n in 0..<600 {
            try cache.set(Self.value(n), forKey: "key-\(n)", expiry: n % 9 == 0 ? .after(.seconds(3600)) : nil,
                          pinned: n % 100 == 0)
        }
        try cache.close()
    }

    private func isDeferred(_ cache: BlobCache) -> Bool { cache.engine.inspect { $0?.state.pendingRestore != nil } == true }

    @Test("a loose value read from the mapped snapshot leaves the restore deferred too")
    func looseGetBeforeRestore() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)
        let large = Samples.random(100_000, seed: 77)
        do {
            let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) { $0.snapshotThreshold = 0 })
            try cache.set(large, forKey: "loose")
            try cache.close()
        }
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(isDeferred(cache))
        #expect(try cache.bytes(forKey: "loose") == large)
        #expect(isDeferred(cache), "checking that no blob was released since the read began restores nothing")
        try cache.close()
    }

    @Test("gets are answered from the mapped snapshot; the first write restores it, with their recency")
    func getsBeforeRestore() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)
        clock.advance(by: .seconds(5))
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(cache.openReport.restoredFromSnapshot)
        #expect(isDeferred(cache))
        #expect(try cache.bytes(forKey: "key-17") == Self.value(17))
        #expect(try cache.bytes(forKey: "key-0") == Self.value(0))
        #expect(try cache.bytes(forKey: "no such key") == nil)
        #expect(isDeferred(cache))
        let readAt = clock.now()
        clock.advance(by: .seconds(5))
        try cache.set([1, 2, 3], forKey: "new")
        #expect(!isDeferred(cache))
        let entries = Dictionary(uniqueKeysWithValues: try cache.entries().map { ($0.key, $0) })
        #expect(entries.count == 601)
        #expect(entries["key-17"].map { abs($0.lastAccess.timeIntervalSince(readAt)) < 0.001 } == true)
        #expect(entries["key-18"].map { $0.lastAccess.timeIntervalSince(readAt) < -1 } == true)
        let counted = cache.statistics().sinceOpen
        #expect(counted.hits == 2 && counted.misses == 1)
        for n in [1, 99, 100, 599] { #expect(try cache.bytes(forKey: "key-\(n)") == Self.value(n)) }
    }

    @Test("LRU order after a deferred read: the key read first is evicted last")
    func recencyDrivesEviction() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)
        clock.advance(by: .seconds(1))
        // (A close that restored would write a new snapshot: any growth of the journal is enough.)
        var cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) { $0.snapshotThreshold = 0 })
        #expect(isDeferred(cache))
        _ = try cache.bytes(forKey: "key-1")   // the oldest unpinned entry, read before the restore
        let snapshot = readFile(dir.appending("index"))
        try cache.close()
        // The close journaled the read without restoring (or rewriting) anything.
        #expect(readFile(dir.appending("index")) == snapshot)
        // Reopened with room for 10 entries: the open evicts the least recent, and key-1 is now recent.
        cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) { $0.maxEntries = 10 })
        #expect(!isDeferred(cache))
        #expect(cache.openReport.evictedAtOpen > 0)
        #expect(try cache.bytes(forKey: "key-1") == Self.value(1))
        #expect(try cache.bytes(forKey: "key-2") == nil)
    }

    @Test("records after the snapshot: sets and removes answer gets before the restore")
    func tailBeforeRestore() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)
        var cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        try cache.set([9, 9], forKey: "key-3")
        try cache.set([7], forKey: "added")
        try cache.removeValue(forKey: "key-4")
        try cache.close()   // too little journal since the snapshot to write another
        cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(cache.openReport.replayedRecords >= 3)
        #expect(isDeferred(cache))
        #expect(try cache.bytes(forKey: "key-3") == [9, 9])
        #expect(try cache.bytes(forKey: "added") == [7])
        #expect(try cache.bytes(forKey: "key-4") == nil)
        #expect(try cache.bytes(forKey: "key-5") == Self.value(5))
        #expect(isDeferred(cache))
        #expect(try cache.keys().count == 600)
        #expect(!isDeferred(cache))
        #expect(try cache.bytes(forKey: "key-3") == [9, 9])
    }

    @Test("what the open would change is done at once: expired entries, limits, records other than sets and removes")
    func restoresAtOnce() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)
        clock.advance(by: .seconds(3601))
        var cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(!isDeferred(cache))
        #expect(cache.openReport.expiredAtOpen == 67)
        try cache.close()

        try populate(dir, clock: clock)   // a snapshot with nothing expired yet
        cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) { $0.maxEntries = 599 })
        #expect(!isDeferred(cache))
        #expect(cache.openReport.evictedAtOpen == 1)
        try cache.removeAll()
        try cache.close()

        try populate(dir, clock: clock)
        cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        try cache.removeAll()   // a record after the snapshot that is not a key's
        try cache.close()
        #expect(FileManager.default.fileExists(atPath: dir.appending("index")))
        cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(!isDeferred(cache))
        #expect(try cache.keys().count == 6)   // the pinned entries
    }

    /// The entry of `key`, as the snapshot in `dir` holds it: its byte offset and key's.
    private func snapshotOffsets(of key: String, in dir: TemporaryDirectory) throws -> (entry: Int, key: Int)? {
        guard case .success(let (file, header))? = try IndexSnapshot.map(CachePath(dir.appending("index")), io: .posix,
                                                                           journalSize: .max, cipher: nil),
              let index = IndexSnapshot.restore(file, header: header), let slot = index.slot(of: key) else { return nil }
        return (header.entriesOffset + Int(slot) * MemoryLayout<CacheIndex.Entry>.stride,
                header.keysOffset + Int(index.entry(at: slot).keyOffset))
    }

    @Test("a damaged chunk met by a get: the snapshot is deleted and the journal replayed", arguments: ["entry", "key"])
    func damagedChunk(part: String) throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)
        let path = dir.appending("index")
        let offsets = try #require(try snapshotOffsets(of: "key-470", in: dir))
        flipByte(path, at: part == "entry" ? offsets.entry : offsets.key, mask: 0x10)
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(isDeferred(cache))
        #expect(cache.openReport.recovery == .none)
        #expect(try cache.bytes(forKey: "key-470") == Self.value(470))
        #expect(!isDeferred(cache))
        #expect(!FileManager.default.fileExists(atPath: path))
        for n in [0, 1, 250, 599] { #expect(try cache.bytes(forKey: "key-\(n)") == Self.value(n)) }
        #expect(try cache.keys().count == 600)
    }

    @Test("256 gets are answered before the restore; the next one restores")
    func readLimit() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        for n in 0..<CacheState.PendingRestore.readLimit { #expect(try cache.bytes(forKey: "key-\(n)") == Self.value(n)) }
        #expect(isDeferred(cache))
        #expect(try cache.bytes(forKey: "key-599") == Self.value(599))
        #expect(!isDeferred(cache))
    }

    @Test("another open's writes are seen: the deferred open restores and catches up", arguments: [false, true])
    func anotherOpenWrites(rewritesJournal: Bool) throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)
        let first = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(try first.bytes(forKey: "key-7") == Self.value(7))
        let second = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        try second.set([4, 2], forKey: "from-second")
        try second.removeValue(forKey: "key-8")
        if rewritesJournal { try second.compact() }
        #expect(isDeferred(first))
        #expect(try first.bytes(forKey: "from-second") == [4, 2])
        #expect(!isDeferred(first))
        #expect(try first.bytes(forKey: "key-8") == nil)
        #expect(try first.bytes(forKey: "key-9") == Self.value(9))
        try first.set([1], forKey: "from-first")
        try second.close()
        try first.close()
        let reopened = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(try reopened.keys().count == 601)
        #expect(try reopened.bytes(forKey: "from-first") == [1])
    }

    @Test("a close while the restore is deferred, after another open rewrote the journal, restores first and loses nothing")
    func closeAfterAnotherOpenRewrote() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)
        let first = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(try first.bytes(forKey: "key-1") == Self.value(1))
        let second = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        try second.set([4, 2], forKey: "from-second")
        try second.compact()
        try second.close()
        #expect(isDeferred(first))
        try first.close()
        let reopened = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(try reopened.keys().count == 601)
        #expect(try reopened.bytes(forKey: "from-second") == [4, 2])
        #expect(try reopened.bytes(forKey: "key-1") == Self.value(1))
    }

    @Test("restored at once: an encrypted cache, and a newest segment whose header a power cut lost")
    func notDeferred() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)
        let packs = dir.appending("packs")
        let newest = try FileManager.default.contentsOfDirectory(atPath: packs).sorted().last
        let number = try #require(newest.flatMap { PackFormat.segmentNumber(fromFileName: $0) })
        let torn = packs + "/" + PackFormat.fileName(of: number + 1)
        writeFile(torn, [UInt8](repeating: 0, count: 40))
        var cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(!isDeferred(cache))
        #expect(!FileManager.default.fileExists(atPath: torn))
        try cache.close()

        let sealed = TemporaryDirectory()
        let key = SymmetricKey(size: .bits256)
        let configuration = BlobCache.Configuration.testing(clock: clock) {
            $0.encryption = .aesGCM(key: key)
            $0.snapshotThreshold = 0
        }
        cache = try BlobCache(directory: sealed.path, configuration: configuration)
        for n in 0..<50 { try cache.set(Self.value(n), forKey: "key-\(n)") }
        try cache.close()
        cache = try BlobCache(directory: sealed.path, configuration: configuration)
        #expect(cache.openReport.restoredFromSnapshot)
        #expect(!isDeferred(cache))
        #expect(try cache.bytes(forKey: "key-3") == Self.value(3))
    }

    @Test("a snapshot whose header lies about expiry: the replay that replaces it removes the expired entries")
    func checksAfterFallback() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)   // 67 entries expire in an hour
        var image = readFile(dir.appending("index"))
        withUnsafeBytes(of: Int64.max.littleEndian) { image.replaceSubrange(88..<96, with: $0) }
        #expect(IndexSnapshot.reseal(&image))
        writeFile(dir.appending("index"), image)
        clock.advance(by: .seconds(3601))
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(isDeferred(cache))
        #expect(try cache.bytes(forKey: "key-9") == nil)   // expired: the entry itself says so
        #expect(try cache.bytes(forKey: "key-1") == Self.value(1))
        try cache.set([1], forKey: "new")
        #expect(!isDeferred(cache))
        #expect(cache.statistics().sinceOpen.expirations == 67)
        #expect(try cache.totals().entries == 600 - 67 + 1)
    }

    @Test("reads before the restore wait for the journal no longer than other reads")
    func recencyIsNotHeldBack() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(try cache.bytes(forKey: "key-1") == Self.value(1))
        #expect(isDeferred(cache))
        clock.advance(by: .seconds(61))   // past accessJournalInterval (60 s)
        #expect(try cache.bytes(forKey: "key-2") == Self.value(2))
        #expect(!isDeferred(cache))
    }

    @Test("a damaged snapshot and a damaged journal: the restore stops the cache, and the next open recovers")
    func damagedSnapshotAndJournal() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        try populate(dir, clock: clock)
        flipByte(dir.appending("index"), at: 4100, mask: 0x10)
        let journal = dir.appending("journal")
        let offsets = journalRecordOffsets(readFile(journal))
        flipByte(journal, at: offsets[300] + 12, mask: 0x01)
        var cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(isDeferred(cache))
        #expect(throws: BlobCacheError.self) { try cache.set([1], forKey: "x") }
        #expect(throws: BlobCacheError.self) { try cache.bytes(forKey: "key-1") }
        try cache.close()
        cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(cache.openReport.recovery != .none)
        #expect(try cache.bytes(forKey: "key-1") == Self.value(1))
        #expect(try cache.keys().count < 600)
    }
}
