import Foundation
import SystemPackage
import Testing
@testable import BlobCache

/// A large set creates its staging file in a shard directory picked at random (`objects/`
/// when that one does not exist) while the value is hashed, and its publish renames the file
/// into its own shard (`StagingFile`): where that file is made, what happens when it cannot
/// be, what a deletion or a planted link does between the stage and the publish, and what a
/// crash leaves.
@Suite("Large sets staged before their id is known")
struct EarlyStagingTests {
    /// Large enough to be hashed on one core while another compresses (and creates the file).
    static let large = Parallel.threshold + 4096

    /// The directories (relative to the cache) in which the traced calls created staging files,
    /// in order; a retry in the same directory (once its shard is made) counts once.
    static func stagingDirectories(_ trace: [(call: FileSystemCall, path: String)], root: String) -> [String] {
        let directories = trace.filter { $0.call == .open && CacheFiles.isStagingName(CachePath($0.path).lastComponent ?? "") }
            .map { String(CachePath($0.path).removingLastComponent().string.dropFirst(root.count + 1)) }
        return directories.enumerated().filter { $0.offset == 0 || directories[$0.offset - 1] != $0.element }.map(\.element)
    }

    /// `objects/<a>/<b>`, the shard of `value`'s blob, relative to the cache.
    static func ownShard(of value: [UInt8]) -> String {
        let hex = BlobID(hashing: value).hex
        return "objects/\(hex.prefix(1))/\(hex.dropFirst().prefix(1))"
    }

    /// The files below `objects/` other than the blobs of `values`.
    static func strayFiles(_ dir: TemporaryDirectory, keeping values: [[UInt8]]) -> [String] {
        let blobs = Set(values.map { looseFile(dir.path, BlobID(hashing: $0)) })
        return filesBelow(dir.appending("objects")).filter { !blobs.contains(dir.appending("objects/" + $0)) }
    }

    static func checkIsClean(_ dir: TemporaryDirectory) throws {
        var options = BlobCache.CheckOptions()
        options.lockTimeout = nil
        #expect(try BlobCache.check(directory: dir.path, options: options).findings.isEmpty)
    }

    @Test("in a new cache a large set creates its staging file in objects/ and leaves only its blob in its shard")
    func stagesInObjects() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem)
        let value = Samples.random(Self.large, seed: 41)
        fileSystem.startTracing()
        try cache.set(value, forKey: "k")
        #expect(Self.stagingDirectories(fileSystem.stopTracing(), root: dir.path) == ["objects"])
        #expect(same(try cache.bytes(forKey: "k"), value))
        #expect(Self.strayFiles(dir, keeping: [value]).isEmpty)
        try cache.close()
        try Self.checkIsClean(dir)
    }

    @Test("where the shard directories exist, large sets stage in them, picked at random, and leave only their blobs")
    func stagesInRandomShards() throws {
        let dir = TemporaryDirectory()
        for a in "0123456789abcdef" {
            for b in "0123456789abcdef" {
                try FileManager.default.createDirectory(atPath: dir.appending("objects/\(a)/\(b)"), withIntermediateDirectories: true)
            }
        }
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem)
        let values = (0..<4).map { Samples.random(Self.large, seed: 70 + UInt64($0)) }
        var staged: [String] = []
        for (n, value) in values.enumerated() {
            fileSystem.startTracing()
            try cache.set(value, forKey: "k\(n)")
            staged += Self.stagingDirectories(fileSystem.stopTracing(), root: dir.path)
        }
        #expect(staged.count == 4 && staged.allSatisfy { $0.split(separator: "/").count == 3 }, "\(staged)")
        // Staged after hashing, each would be in its own shard: all four there by chance is 1 in 256^4.
        #expect(staged != values.map(Self.ownShard(of:)))
        #expect(Set(staged).count > 1, "picked at random: all four the same is 1 in 256^3")
        for (n, value) in values.enumerated() { #expect(same(try cache.bytes(forKey: "k\(n)"), value)) }
        #expect(Self.strayFiles(dir, keeping: values).isEmpty)
        try cache.close()
    }

    @Test("under .powerLossSafe a large set stages in its own shard: a rename between directories would need both fsynced")
    func powerLossSafeStagesInOwnShard() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem) { $0.durability = .powerLossSafe }
        for seed in UInt64(51)...54 {
            let value = Samples.random(Self.large, seed: seed)
            fileSystem.startTracing()
            try cache.set(value, forKey: "k\(seed)")
            #expect(Self.stagingDirectories(fileSystem.stopTracing(), root: dir.path) == [Self.ownShard(of: value)])
            #expect(same(try cache.bytes(forKey: "k\(seed)"), value))
        }
    }

    /// Sets a large value in a fresh cache, with `onWrite` run before its stage writes the file
    /// (its shard directories made) and `onRename` before its publish; returns the directory,
    /// cache and value, and how the set ended.
    static func setLarge(onWrite: (@Sendable (CacheFiles, BlobID) -> Void)? = nil,
                         onRename: (@Sendable (CacheFiles, BlobID) -> Void)? = nil)
        throws -> (dir: TemporaryDirectory, cache: BlobCache, value: [UInt8], result: Result<Void, any Error>) {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem)
        let value = Samples.random(Self.large, seed: 60)
        let id = BlobID(hashing: value)
        let files = CacheFiles(root: CachePath(normalizing: dir.path))
        let staging = { @Sendable (path: CachePath) in CacheFiles.isStagingName(path.lastComponent ?? "") }
        fileSystem.interposeOnWrite { path in
            guard staging(path) else { return }
            fileSystem.interposeOnWrite(before: nil)
            onWrite?(files, id)
        }
        fileSystem.interposeOnRename { source, _ in
            guard staging(source) else { return }
            fileSystem.interposeOnRename(before: nil)
            onRename?(files, id)
        }
        let result: Result<Void, any Error>
        do {
            try cache.set(value, forKey: "k")
            result = .success(())
        } catch {
            result = .failure(error)
        }
        // A hook that did not fire holds the file system that holds it.
        fileSystem.interposeOnWrite(before: nil)
        fileSystem.interposeOnRename(before: nil)
        return (dir: dir, cache: cache, value: value, result: result)
    }

    @Test("a large set whose shard directories are removed before it publishes makes them again")
    func publishRemakesShardDirectories() throws {
        let removed = Locked(false)
        // What deleting the last blob of that shard, between the stage and the publish, does.
        let set = try Self.setLarge(onRename: { files, id in
            let shards = files.shardDirectories(of: id)
            removed.withLock { $0 = rmdir(shards.lower.string) == 0 && rmdir(shards.upper.string) == 0 }
        })
        #expect(removed.withLock { $0 })
        try set.result.get()
        #expect(same(try set.cache.bytes(forKey: "k"), set.value))
        #expect(Self.strayFiles(set.dir, keeping: [set.value]).isEmpty)
        try set.cache.close()
        try Self.checkIsClean(set.dir)
    }

    @Test("a link planted in place of a large set's shard directory after its stage is not published through")
    func publishRefusesShardLink() throws {
        let planted = Locked<String?>(nil)
        let set = try Self.setLarge(onWrite: { files, id in
            let upper = files.shardDirectories(of: id).upper.string
            let outside = upper + ".outside"
            try? FileManager.default.moveItem(atPath: upper, toPath: outside)
            try? FileManager.default.createSymbolicLink(atPath: upper, withDestinationPath: outside)
            planted.withLock { $0 = outside }
        })
        let outside = try #require(planted.withLock { $0 })
        #expect(throws: BlobCacheError.self) { try set.result.get() }
        #expect(filesBelow(outside).isEmpty, "a file was written through the link")
        #expect(try set.cache.bytes(forKey: "k") == nil)
        #expect(filesBelow(set.dir.appending("objects")).allSatisfy { !$0.contains("tmp.") }, "the staged file is deleted")
    }

    @Test("a large set whose early staging file cannot be created stages in its own shard instead")
    func createFailureFallsBackToShard() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem)
        let value = Samples.random(Self.large, seed: 44)
        fileSystem.startTracing()
        fileSystem.arm(.init(call: .open, occurrence: 1, fault: .fail(.noSpace)))
        try cache.set(value, forKey: "k")
        let trace = fileSystem.stopTracing()
        #expect(fileSystem.fired)
        #expect(Self.stagingDirectories(trace, root: dir.path) == ["objects", Self.ownShard(of: value)],
                "the failed create in objects/, then the one in its shard")
        #expect(same(try cache.bytes(forKey: "k"), value))
        #expect(Self.strayFiles(dir, keeping: [value]).isEmpty)
    }

    @Test("a large value already stored, or small enough once compressed to be packed, leaves no staging file")
    func unusedStagingFileIsDeleted() throws {
        let dir = TemporaryDirectory()
        // .balanced: under the default, a large value that LZ4 shrinks by only about half stays raw.
        let cache = try openCache(dir) { $0.packThreshold = 200 << 10; $0.compression = .balanced }
        let loose = Samples.random(Self.large, seed: 45)
        let packable = Samples.compressible(Self.large, seed: 46)
        try cache.set(loose, forKey: "a")
        try cache.set(loose, forKey: "b")        // already stored: shared
        try cache.set(packable, forKey: "c")     // compresses below the pack threshold
        #expect(try cache.entry(forKey: "c")?.storedSize ?? .max < 200 << 10)
        #expect(same(try cache.bytes(forKey: "b"), loose))
        #expect(same(try cache.bytes(forKey: "c"), packable))
        #expect(Self.strayFiles(dir, keeping: [loose]).isEmpty)
    }

    @Test("a staging file a crashed writer left in objects/ is a stale temporary: reported by fsck, swept by compact")
    func staleStagingFileInObjects() throws {
        let dir = TemporaryDirectory()
        let cache = try openCache(dir)
        try cache.set(Samples.random(Self.large, seed: 47), forKey: "k")
        try cache.close()
        let leftover = dir.appending("objects/tmp.999999.1a2b.79")
        writeFile(leftover, [1, 2, 3])
        var options = BlobCache.CheckOptions()
        options.lockTimeout = nil
        let findings = try BlobCache.check(directory: dir.path, options: options).findings
        #expect(findings.map(\.problem) == ["stale-temp"])
        #expect(findings.first?.path == leftover)
        let reopened = try openCache(dir)
        try reopened.compact()
        #expect(!FileManager.default.fileExists(atPath: leftover))
        #expect(try reopened.bytes(forKey: "k") != nil)
    }

    @Test("in a cache shared with the group, a staged file whose fchmod fails is deleted, not left behind")
    func failedGroupPermissionsLeaveNoFile() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("team")   // made by the open, so made the group's
        let fileSystem = FaultyFileSystem()
        let configuration = BlobCache.Configuration.testing { $0.shareWithGroup = true; $0.packThreshold = 4096 }
        let cache = try BlobCache(directory: root, configuration: configuration.through(fileSystem))
        let value = Samples.random(Self.large, seed: 48)   // its file is the first one made
        fileSystem.arm(.init(call: .setPermissions, occurrence: 1, fault: .fail(.permissionDenied)))
        _ = try? cache.set(value, forKey: "k")
        #expect(fileSystem.fired)
        let left = filesBelow(root + "/objects").filter { $0.contains("tmp.") }
        #expect(left.isEmpty, "\(left)")
    }

    @Test("a link planted in place of a shard directory the publish has just made again is not published through")
    func republishRefusesShardLink() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem)
        let value = Samples.random(Self.large, seed: 49)
        let shards = CacheFiles(root: CachePath(normalizing: dir.path)).shardDirectories(of: BlobID(hashing: value))
        let outside = shards.upper.string + ".outside"
        let removed = Locked(false), planted = Locked(false)
        // A deletion removes the shards before the publish, which makes them again; then the
        // upper one is swapped for a link before the rename.
        fileSystem.interposeOnRename { source, _ in
            guard CacheFiles.isStagingName(source.lastComponent ?? ""), !removed.withLock({ $0 }) else { return }
            removed.withLock { $0 = rmdir(shards.lower.string) == 0 && rmdir(shards.upper.string) == 0 }
        }
        fileSystem.interposeOnMakeDirectory { path in
            guard path == shards.lower, removed.withLock({ $0 }), !planted.withLock({ $0 }) else { return }
            try? FileManager.default.moveItem(atPath: shards.upper.string, toPath: outside)
            try? FileManager.default.createSymbolicLink(atPath: shards.upper.string, withDestinationPath: outside)
            planted.withLock { $0 = true }
        }
        #expect(throws: BlobCacheError.self) { try cache.set(value, forKey: "k") }
        #expect(removed.withLock { $0 } && planted.withLock { $0 })
        #expect(filesBelow(outside).isEmpty, "a file was written through the link")
        #expect(try cache.bytes(forKey: "k") == nil)
    }
}
