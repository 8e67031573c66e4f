import Foundation
import SystemPackage
import Testing
@testable import BlobCache

/// A large set creates its staging file in `objects/` while the value is hashed, and its
/// publish renames the file into its shard (`StagingFile`): where that file is made, what
/// happens when it cannot be, and what a crash leaves of it.
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

    /// The files below `objects/` other than the blobs of `values`.
    static func strayFiles(_ dir: TemporaryDirectory, keeping values: [[UInt8]]) -> [String] {
        let blobs = Set(values.map { looseFile(dir.path, BlobID(hashing: $0)) })
        return filesBelow(dir.appending("objects")).filter { !blobs.contains(dir.appending("objects/" + $0)) }
    }

    @Test("a large set creates its staging file in objects/ and leaves only its blob in its shard")
    func stagesInObjects() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem)
        let value = Samples.random(Self.large, seed: 41)
        fileSystem.startTracing()
        try cache.set(value, forKey: "k")
        let trace = fileSystem.stopTracing()
        #expect(Self.stagingDirectories(trace, root: dir.path) == ["objects"])
        #expect(same(try cache.bytes(forKey: "k"), value))
        #expect(Self.strayFiles(dir, keeping: [value]).isEmpty)
    }

    @Test("under .powerLossSafe a large set stages in its shard: a rename between directories would need both fsynced")
    func powerLossSafeStagesInShard() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem) { $0.durability = .powerLossSafe }
        let value = Samples.random(Self.large, seed: 42)
        let id = BlobID(hashing: value)
        fileSystem.startTracing()
        try cache.set(value, forKey: "k")
        let trace = fileSystem.stopTracing()
        #expect(Self.stagingDirectories(trace, root: dir.path) == ["objects/\(id.hex.prefix(1))/\(id.hex.dropFirst().prefix(1))"])
        #expect(same(try cache.bytes(forKey: "k"), value))
    }

    @Test("a large set whose shard directories are removed before it publishes makes them again")
    func publishRemakesShardDirectories() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem)
        let value = Samples.random(Self.large, seed: 43)
        let shards = CacheFiles(root: CachePath(normalizing: dir.path)).shardDirectories(of: BlobID(hashing: value))
        let objects = CachePath(normalizing: dir.appending("objects"))
        // What deleting the last blob of that shard, between the stage and the publish, does.
        fileSystem.interposeOnRename { source, _ in
            guard source.removingLastComponent() == objects else { return }
            fileSystem.interposeOnRename(before: nil)
            #expect(rmdir(shards.lower.string) == 0 && rmdir(shards.upper.string) == 0)
        }
        try cache.set(value, forKey: "k")
        #expect(same(try cache.bytes(forKey: "k"), value))
        #expect(Self.strayFiles(dir, keeping: [value]).isEmpty)
        try cache.close()
        var options = BlobCache.CheckOptions()
        options.lockTimeout = nil
        #expect(try BlobCache.check(directory: dir.path, options: options).findings.isEmpty)
    }

    @Test("a large set whose early staging file cannot be created stages in its shard instead")
    func createFailureFallsBackToShard() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem)
        let value = Samples.random(Self.large, seed: 44)
        let id = BlobID(hashing: value)
        fileSystem.startTracing()
        fileSystem.arm(.init(call: .open, occurrence: 1, fault: .fail(.noSpace)))
        try cache.set(value, forKey: "k")
        let trace = fileSystem.stopTracing()
        #expect(fileSystem.fired)
        #expect(Self.stagingDirectories(trace, root: dir.path) == ["objects", "objects/\(id.hex.prefix(1))/\(id.hex.dropFirst().prefix(1))"],
                "the failed create in objects/, then the one in the shard")
        #expect(same(try cache.bytes(forKey: "k"), value))
        #expect(Self.strayFiles(dir, keeping: [value]).isEmpty)
    }

    @Test("a large value already stored, or small enough once compressed to be packed, leaves no staging file")
    func unusedStagingFileIsDeleted() throws {
        let dir = TemporaryDirectory()
        let cache = try openCache(dir) { $0.packThreshold = 200 << 10 }
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
}
