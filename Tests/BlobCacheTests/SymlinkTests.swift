import Foundation
import Testing
@testable import BlobCache

/// No symbolic link inside DIR is followed: a link planted where a segment,
/// the journal, the lock, the snapshot or the counters should be never leads a write (or a
/// truncation) to the file it points at.
@Suite("Symbolic links in DIR")
struct SymlinkTests {
    /// A cache with a loose and a packed value, closed, plus a file outside it to aim links at.
    private func makeCache(_ dir: TemporaryDirectory) throws -> (root: String, victim: String, victimBytes: [UInt8]) {
        let root = dir.appending("cache"), victim = dir.appending("thesis.pdf")
        let cache = try BlobCache(directory: root)
        try cache.set(Samples.random(100_000, seed: 1), forKey: "loose")
        try cache.set(Samples.random(500, seed: 2), forKey: "packed")
        try cache.close()
        let bytes = Samples.random(20_000, seed: 3)
        writeFile(victim, bytes)
        return (root, victim, bytes)
    }

    @Test("a link named like a segment is not opened, truncated or written: the cache opens and works beside it")
    func segmentLink() throws {
        let dir = TemporaryDirectory()
        let (root, victim, bytes) = try makeCache(dir)
        try FileManager.default.createSymbolicLink(atPath: root + "/packs/999999.pack", withDestinationPath: victim)
        let cache = try BlobCache(directory: root)
        #expect(same(try cache.bytes(forKey: "packed"), Samples.random(500, seed: 2)))
        for n in 0..<50 { try cache.set(Samples.random(700, seed: UInt64(10 + n)), forKey: "k\(n)") }
        try cache.compact()
        try cache.close()
        #expect(readFile(victim).elementsEqual(bytes), "the file behind the link changed")
        let check = try BlobCache.check(directory: root)
        #expect(check.findings.contains { $0.problem == "not-a-regular-file" && $0.path.hasSuffix("999999.pack") })
    }

    @Test("links where the journal, lock, sequence, snapshot, stats or config should be are never written through",
          arguments: ["journal", "lock", "sequence", "index", "stats", "config"])
    func fileLinks(name: String) throws {
        let dir = TemporaryDirectory()
        let (root, victim, bytes) = try makeCache(dir)
        try? FileManager.default.removeItem(atPath: root + "/" + name)
        try FileManager.default.createSymbolicLink(atPath: root + "/" + name, withDestinationPath: victim)
        var configuration = BlobCache.Configuration()
        configuration.snapshotThreshold = 0
        // The open may refuse (a link where the journal or lock must be) or go on; either way
        // the file behind the link is untouched.
        if let cache = try? BlobCache(directory: root, configuration: configuration) {
            try? cache.set([1, 2, 3], forKey: "new")
            try? cache.close()
        }
        try? BlobCache.saveDefaultLimits(.init(maxStoredBytes: 1 << 20), in: root)
        var repair = BlobCache.CheckOptions()
        repair.repair = true
        _ = try? BlobCache.check(directory: root, options: repair)
        #expect(readFile(victim).elementsEqual(bytes), "\(name): the file behind the link changed")
    }

    @Test("a directory where the next segment would go does not stop new values being packed")
    func directoryNamedLikeNextSegment() throws {
        let dir = TemporaryDirectory()
        let configure: (inout BlobCache.Configuration) -> Void = { $0.packSegmentLimit = 64 << 10 }
        let cache = try BlobCache(directory: dir.path, configuration: .testing(configure))
        try cache.set(Samples.random(500, seed: 1), forKey: "first")
        try cache.close()
        try FileManager.default.createDirectory(atPath: dir.appending("packs/000002.pack"), withIntermediateDirectories: false)
        let reopened = try BlobCache(directory: dir.path, configuration: .testing(configure))
        var values: [String: [UInt8]] = [:]
        for n in 0..<80 {   // more than one segment holds
            values["k\(n)"] = Samples.random(2000, seed: UInt64(10 + n))
            try reopened.set(values["k\(n)"]!, forKey: "k\(n)")
        }
        for (key, value) in values { #expect(same(try reopened.bytes(forKey: key), value), "\(key)") }
        try reopened.close()
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: dir.appending("packs/000002.pack"), isDirectory: &isDirectory) && isDirectory.boolValue)
    }
}

/// Shard directories: a link planted in place of `objects/<h>` is never
/// followed, for a write, a read or a delete.
@Suite("Symbolic links in place of shard directories")
struct ShardLinkTests {
    @Test("a set whose shard directory is a link fails rather than writing outside DIR")
    func writeThroughShardLink() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache"), outside = dir.appending("outside")
        let value = Samples.random(100_000, seed: 21)
        let hex = BlobID(hashing: value).hex
        let shard = String(hex.prefix(1)), leaf = String(hex.dropFirst().prefix(1))
        try FileManager.default.createDirectory(atPath: outside + "/" + leaf, withIntermediateDirectories: true)
        let cache = try BlobCache(directory: root)
        try FileManager.default.createSymbolicLink(atPath: root + "/objects/" + shard, withDestinationPath: outside)
        #expect(throws: BlobCacheError.self) { try cache.set(value, forKey: "k") }
        try cache.set(Samples.random(300, seed: 22), forKey: "packed")
        try cache.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside + "/" + leaf).isEmpty, "a file was written outside DIR")
        let report = try BlobCache.check(directory: root)
        #expect(report.findings.contains { $0.problem == "not-a-regular-file" && $0.path.hasSuffix("/objects/" + shard) })
    }

    @Test("a blob whose shard directory was replaced by a link is not read or deleted through it")
    func readThroughShardLink() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache"), moved = dir.appending("moved")
        let value = Samples.random(100_000, seed: 23)
        let shard = String(BlobID(hashing: value).hex.prefix(1))
        let cache = try BlobCache(directory: root)
        try cache.set(value, forKey: "k")
        try cache.close()
        try FileManager.default.moveItem(atPath: root + "/objects/" + shard, toPath: moved)
        try FileManager.default.createSymbolicLink(atPath: root + "/objects/" + shard, withDestinationPath: moved)
        let reopened = try BlobCache(directory: root)
        let read = try? reopened.bytes(forKey: "k")
        #expect(read == nil, "read through a link out of DIR")
        try reopened.compact()
        try reopened.close()
        #expect(filesBelow(moved).count == 1, "the blob outside DIR was deleted: \(filesBelow(moved))")
    }
}

/// `objects/` and `packs/` themselves.
@Suite("Symbolic links in place of objects/ and packs/")
struct StoreDirectoryLinkTests {
    @Test("fsck reports a link in place of objects/ or packs/ and never lists what it leads to", arguments: ["objects", "packs"])
    func storeDirectoryLink(name: String) throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache"), moved = dir.appending("moved")
        let cache = try BlobCache(directory: root)
        try cache.set(Samples.random(100_000, seed: 31), forKey: "loose")
        try cache.set(Samples.random(300, seed: 32), forKey: "packed")
        try cache.close()
        try FileManager.default.moveItem(atPath: root + "/" + name, toPath: moved)
        try FileManager.default.createSymbolicLink(atPath: root + "/" + name, withDestinationPath: moved)
        let report = try BlobCache.check(directory: root)
        #expect(report.findings.contains { $0.problem == "not-a-regular-file" && $0.path == root + "/" + name })
        // What lies behind the link is not looked at: the entry's blob there counts as missing.
        #expect(report.findings.contains { $0.problem == "missing-blob" }, "listed through the link")
        #expect(report.findings.allSatisfy { !$0.path.hasPrefix(root + "/" + name + "/") || $0.problem == "missing-blob" })
        #expect(throws: BlobCacheError.self) { try BlobCache(directory: root) }
    }
}
