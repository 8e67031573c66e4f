import Foundation
import SystemPackage
import Testing
@testable import BlobCache

@Suite("Journal replay and recovery")
struct JournalRecoveryTests {
    /// Sets key-0 … key-(count-1), one journal record each, and closes.
    private func populate(_ dir: TemporaryDirectory, count: Int, clock: ManualClock = ManualClock()) throws {
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        for n in 0..<count { try cache.set(Samples.random(200 + n, seed: UInt64(n)), forKey: "key-\(n)") }
        try cache.close()
    }

    private func journalPath(_ dir: TemporaryDirectory) -> String { dir.appending("journal") }

    /// Byte offsets where each record of the journal starts.
    private func recordOffsets(_ dir: TemporaryDirectory) -> [Int] { journalRecordOffsets(readFile(journalPath(dir))) }

    @Test("an eviction's remove record, framed from key bytes, is the same as one framed from the key")
    func removeFromKeyBytes() throws {
        let dir = TemporaryDirectory()
        let path = CachePath(dir.appending("journal"))
        let journal = try JournalFile.fresh(at: path, io: .posix, created: 0, synchronous: false, cipher: nil)
        let key = "clé-\u{1F511}"
        var utf8 = Array(key.utf8)
        utf8.withUnsafeMutableBytes { journal.appendRemove(keyBytes: UnsafeRawBufferPointer($0), reason: .evicted) }
        try journal.flush()
        var expected = BinaryWriter(capacity: 64)
        JournalFormat.frame(.remove(key: key, reason: .evicted), seed: JournalFormat.seed(salt: journal.header.salt), cipher: nil, into: &expected)
        #expect(Array(readFile(path.string).dropFirst(JournalFormat.headerSize)) == expected.bytes)
    }

    @Test("a clean close keeps every entry and the exact LRU order, even for unjournaled reads")
    func reopenKeepsLRUOrder() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        for n in 0..<40 { try cache.set(Samples.random(100, seed: UInt64(n)), forKey: "key-\(n)") }
        // Reads within the access interval are not journaled one by one; close must persist them.
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<200 {
            _ = try cache.bytes(forKey: "key-\(Int(generator.next() % 40))")
            clock.advance(by: .milliseconds(10))
        }
        let order = try cache.keys()
        try cache.close()
        let reopened = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(reopened.openReport.recovery == .none)
        #expect(try reopened.keys() == order)
        for n in 0..<40 { #expect(same(try reopened.bytes(forKey: "key-\(n)"), Samples.random(100, seed: UInt64(n)))) }
    }

    @Test("a torn tail is cut off and the open succeeds with every earlier entry")
    func tornTail() throws {
        let dir = TemporaryDirectory()
        try populate(dir, count: 10)
        let size = readFile(journalPath(dir)).count
        let last = recordOffsets(dir).last!
        for cut in [last + 3, last + 9, size - 1] {
            let copy = TemporaryDirectory()
            try FileManager.default.removeItem(atPath: copy.path)
            try FileManager.default.copyItem(atPath: dir.path, toPath: copy.path)
            truncateFile(copy.appending("journal"), to: cut)
            let cache = try BlobCache(directory: copy.path, configuration: .testing())
            #expect(cache.openReport.recovery == .truncatedTornTail(at: last, bytesCut: cut - last))
            #expect(readFile(copy.appending("journal")).count == last)
            #expect(try cache.keys() == (0..<9).map { "key-\($0)" })
            try cache.set([1, 2, 3], forKey: "after")
            try cache.close()
            let again = try BlobCache(directory: copy.path, configuration: .testing())
            #expect(again.openReport.recovery == .none)
            #expect(try again.bytes(forKey: "after") == [1, 2, 3])
            #expect(same(try again.bytes(forKey: "key-8"), Samples.random(208, seed: 8)))
        }
    }

    @Test("a checksum failure mid-journal stops replay there, keeps earlier entries, and rewrites the journal")
    func midFileCorruption() throws {
        let dir = TemporaryDirectory()
        try populate(dir, count: 20)
        let offsets = recordOffsets(dir)
        flipByte(journalPath(dir), at: offsets[10] + 20)
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        guard case .stoppedAtCorruption(let offset, _) = cache.openReport.recovery else {
            Issue.record("expected stoppedAtCorruption, got \(cache.openReport.recovery)")
            return
        }
        #expect(offset == offsets[10])
        #expect(try cache.keys() == (0..<10).map { "key-\($0)" })
        for n in 0..<10 { #expect(same(try cache.bytes(forKey: "key-\(n)"), Samples.random(200 + n, seed: UInt64(n)))) }
        try cache.close()
        let again = try BlobCache(directory: dir.path, configuration: .testing())
        #expect(again.openReport.recovery == .none)
        #expect(try again.totals().entries == 10)
    }

    @Test("a destroyed journal header rebuilds from the blobs: open succeeds, blobs are re-adopted by id")
    func destroyedHeader() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        var ids: [BlobID] = []
        for n in 0..<6 { ids.append(try cache.set(Samples.random(n < 3 ? 500 : 100_000, seed: UInt64(n)), forKey: "key-\(n)")) }
        try cache.close()
        patchFile(journalPath(dir), at: 0, [UInt8](repeating: 0, count: JournalFormat.headerSize))
        let reopened = try BlobCache(directory: dir.path, configuration: .testing())
        guard case .rebuiltFromBlobs(_, let adopted, let removed) = reopened.openReport.recovery else {
            Issue.record("expected rebuiltFromBlobs, got \(reopened.openReport.recovery)")
            return
        }
        #expect(adopted == 6 && removed == 0)
        #expect(try reopened.keys().isEmpty)
        for (n, id) in ids.enumerated() {
            #expect(same(try reopened.bytes(for: id), Samples.random(n < 3 ? 500 : 100_000, seed: UInt64(n))))
        }
        try reopened.set([9], forKey: "new")
        try reopened.close()
        let again = try BlobCache(directory: dir.path, configuration: .testing())
        #expect(again.openReport.recovery == .none)
        #expect(try again.totals().entries == 7)
    }

    @Test("a journal of a newer format version is refused with a clear error and left untouched")
    func newerVersion() throws {
        let dir = TemporaryDirectory()
        try populate(dir, count: 3)
        var header = Array(readFile(journalPath(dir)).prefix(JournalFormat.headerSize))
        header[4] = 3
        let crc = CRC32.checksum(Array(header[0..<28]))
        header.replaceSubrange(28..<32, with: withUnsafeBytes(of: crc.littleEndian, Array.init))
        patchFile(journalPath(dir), at: 0, header)
        let before = readFile(journalPath(dir))
        #expect(throws: BlobCacheError.unsupportedFormat(path: journalPath(dir), version: 3)) {
            try BlobCache(directory: dir.path, configuration: .testing())
        }
        #expect(readFile(journalPath(dir)) == before)
        #expect(filesBelow(dir.appending("packs")) == ["000001.pack"])
    }

    @Test("many overwrites trigger compaction; the journal stays bounded and compact() shrinks it")
    func compaction() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        // Ten live entries: a compacted journal is about a kilobyte, so the journal may grow by
        // the slack (1 MiB without a cap) before each rewrite, and never further.
        let bound = Int(CacheState.allowance(cap: nil, fraction: 8)) + 4096
        var sets = 0
        while try cache.totals().counters.journalCompactions < 2 {
            try cache.set(Samples.random(50, seed: UInt64(sets % 7)), forKey: "key-\(sets % 10)")
            sets += 1
            let journalBytes = try cache.totals().journalBytes
            if journalBytes > bound { Issue.record("journal at \(journalBytes) bytes after \(sets) sets"); break }
            if sets > 100_000 { Issue.record("no second compaction after \(sets) sets"); break }
        }
        #expect(sets > 2 * 8192)
        let report = try cache.compact()
        #expect(report.journalRecordsAfter == 10)
        #expect(report.journalBytesAfter <= report.journalBytesBefore)
        try cache.close()
        let again = try BlobCache(directory: dir.path, configuration: .testing())
        #expect(again.openReport.replayedRecords == 10)
        for n in (sets - 10)..<sets { #expect(same(try again.bytes(forKey: "key-\(n % 10)"), Samples.random(50, seed: UInt64(n % 7)))) }
    }

    @Test("expired entries are misses, removed when read, and dropped at open with their blobs")
    func expiry() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) { $0.packThreshold = 0 })
        try cache.set([1], forKey: "short", expiry: .after(.seconds(10)))
        try cache.set([2], forKey: "long", expiry: .after(.seconds(100)))
        try cache.set([3], forKey: "dated", expiry: .at(clock.now().addingTimeInterval(50)))
        try cache.set([4], forKey: "forever")
        clock.advance(by: .seconds(11))
        #expect(try cache.bytes(forKey: "short") == nil)
        #expect(try cache.contains("short") == false)
        #expect(try cache.totals().counters.expirations == 1)
        clock.advance(by: .seconds(40))
        #expect(try cache.removeExpired() == 1)   // "dated"
        try cache.close()
        clock.advance(by: .seconds(60))
        let reopened = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        #expect(reopened.openReport.expiredAtOpen == 1)  // "long"
        #expect(try reopened.keys() == ["forever"])
        #expect(filesBelow(dir.appending("objects")).count == 1)
    }

    @Test("an entry expiring before all others is found after a scan found none, after a replay and after a snapshot restore",
          arguments: [false, true])
    func expiryAfterScans(snapshot: Bool) throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let configuration = BlobCache.Configuration.testing(clock: clock) { $0.snapshotThreshold = snapshot ? 0 : .max }
        let cache = try BlobCache(directory: dir.path, configuration: configuration)
        try cache.set([1], forKey: "late", expiry: .after(.seconds(1000)))
        #expect(try cache.removeExpired() == 0)
        try cache.set([2], forKey: "soon", expiry: .after(.seconds(10)))
        clock.advance(by: .seconds(20))
        #expect(try cache.removeExpired() == 1)
        try cache.set([3], forKey: "sooner", expiry: .after(.seconds(5)))
        try cache.close()
        clock.advance(by: .seconds(10))
        let reopened = try BlobCache(directory: dir.path, configuration: configuration)
        #expect(reopened.openReport.restoredFromSnapshot == snapshot)
        #expect(reopened.openReport.expiredAtOpen == 1)
        #expect(try reopened.keys() == ["late"])
        try reopened.set([4], forKey: "soonest", expiry: .after(.seconds(1)))
        clock.advance(by: .seconds(2))
        #expect(try reopened.removeExpired() == 1)
        #expect(try reopened.keys() == ["late"])
    }

    @Test("a second open of the same cache, in this process and in another, works beside the first")
    func opensShareTheDirectory() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let second = try BlobCache(directory: dir.path, configuration: .testing())
        try second.set([1], forKey: "k")
        #expect(try cache.bytes(forKey: "k") == [1])
        try second.close()
        try cache.close()

        let child = try ChildProcess(arguments: [dir.path, "hold"])
        #expect(child.readLine() == "open")
        let beside = try BlobCache(directory: dir.path, configuration: .testing())
        #expect(try beside.bytes(forKey: "k") == [1])
        try beside.close()
        child.closeInput()
        #expect(child.wait() == 0)
    }
}
