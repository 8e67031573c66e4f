import Foundation
import Testing
@testable import BlobCache

/// A cache owns its directory and nothing else (docs/SECURITY.md): a directory that
/// is not a cache's is refused untouched, a cache is tagged `CACHEDIR.TAG`, and no repair
/// deletes a file whose name the cache does not give.
@Suite("Directory ownership")
struct DirectoryOwnershipTests {
    /// A project folder: what `BLOBCACHE_DIR=.` in the wrong place finds.
    private func makeProject(_ root: String) throws -> [String: [UInt8]] {
        let files: [String: [UInt8]] = ["main.c": Array("int main() {}\n".utf8), "objects/main.o": [0x7f, 0x45, 0x4c, 0x46],
                                        "packs/notes.txt": Array("todo\n".utf8)]
        for (name, bytes) in files {
            try FileManager.default.createDirectory(atPath: root + "/" + (name as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            writeFile(root + "/" + name, bytes)
        }
        return files
    }

    private func expectUntouched(_ root: String, _ files: [String: [UInt8]]) throws {
        for (name, bytes) in files { #expect(readFile(root + "/" + name) == bytes, "\(name)") }
        let top = try FileManager.default.contentsOfDirectory(atPath: root).sorted()
        #expect(top == ["main.c", "objects", "packs"], "\(top)")
    }

    @Test("a non-empty directory that is not a cache is refused, and nothing in it is touched")
    func foreignDirectoryIsRefused() throws {
        let dir = TemporaryDirectory()
        let files = try makeProject(dir.path)
        #expect(throws: BlobCacheError.self) { try BlobCache(directory: dir.path) }
        #expect(throws: BlobCacheError.self) { try BlobCache.check(directory: dir.path) }
        var repair = BlobCache.CheckOptions()
        repair.repair = true
        #expect(throws: BlobCacheError.self) { try BlobCache.check(directory: dir.path, options: repair) }
        try expectUntouched(dir.path, files)
    }

    @Test("blobcache pointed at a folder that is not a cache exits 8 with one line saying why, for every command")
    func foreignDirectoryCLI() throws {
        let dir = TemporaryDirectory()
        let files = try makeProject(dir.path)
        let cli = CLI(directory: dir.path)
        for command in [["stat"], ["ls"], ["put", "k"], ["fsck"], ["fsck", "--repair"], ["compact"]] {
            let result = try cli.run(command, stdin: Data([1]))
            #expect(result.status == 8, "\(command): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("CACHEDIR.TAG"),
                    "\(command): \(result.stderr)")
        }
        try expectUntouched(dir.path, files)
    }

    @Test("an open that finds another process's new tag only when it lists the directory still opens it")
    func tagAppearingDuringTheCheck() throws {
        // Four writers starting at once on a new directory (MultiProcessTests) showed it: one
        // checked for the tag before another open wrote it, then listed the directory after,
        // and refused the directory for holding CACHEDIR.TAG.
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let files = CacheFiles(root: CachePath(normalizing: dir.path))
        fileSystem.interposeOnList { path in
            guard path == files.root else { return }
            fileSystem.interposeOnList(before: nil)
            CacheDirectory.tagIfNeeded(files, io: .posix)
        }
        let cache = try openCache(dir, fileSystem)
        try cache.set([1, 2, 3], forKey: "k")
        #expect(try cache.bytes(forKey: "k") == [1, 2, 3])
        try cache.close()
    }

    @Test("a new cache is tagged CACHEDIR.TAG; a cache without a tag gets one at its next open")
    func cachesAreTagged() throws {
        let dir = TemporaryDirectory()
        try BlobCache(directory: dir.path).close()
        let tag = dir.appending("CACHEDIR.TAG")
        let signature = Array("Signature: 8a477f597d28d172789f06886806bc55".utf8)
        #expect(readFile(tag).starts(with: signature))
        try FileManager.default.removeItem(atPath: tag)   // as an earlier release left it
        let cache = try BlobCache(directory: dir.path)
        try cache.set([1, 2, 3], forKey: "k")
        try cache.close()
        #expect(readFile(tag).starts(with: signature))
    }

    @Test("rebuilding after a lost journal, and fsck --repair, keep files the cache did not make")
    func repairsKeepForeignFiles() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        let values = [Samples.random(100_000, seed: 1), Samples.random(500, seed: 2)]
        for (n, value) in values.enumerated() { try cache.set(value, forKey: "k\(n)") }
        try cache.close()
        let planted = ["objects/0/0/not-a-blob", "objects/README", "packs/notes.txt", "packs/tmp.notes", "objects/A/keep"]
        try FileManager.default.createDirectory(atPath: dir.appending("objects/0/0"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir.appending("objects/A"), withIntermediateDirectories: true)
        for name in planted { writeFile(dir.appending(name), [1, 2, 3]) }
        try FileManager.default.removeItem(atPath: dir.appending("journal"))

        let cli = CLI(directory: dir.path)
        let check = try cli.run(["fsck"])
        #expect(check.output.contains("unknown-file"), "\(check.output)")
        #expect(try cli.run(["fsck", "--repair"]).status == 1)
        let after = try cli.run(["fsck"])
        #expect(after.status == 0, "\(after.output)")   // unknown files are notes, not errors
        let rebuilt = try BlobCache(directory: dir.path)
        for value in values { #expect(same(try rebuilt.bytes(for: BlobID(hashing: value)), value)) }
        try rebuilt.compact()
        try rebuilt.close()
        for name in planted { #expect(readFile(dir.appending(name)) == [1, 2, 3], "\(name)") }
    }

    @Test("a folder whose file named journal is not a BlobCache journal, or whose CACHEDIR.TAG is another program's, is refused untouched")
    func impostorNamesAreRefused() throws {
        let dir = TemporaryDirectory()
        let notes = dir.appending("notes"), cargo = dir.appending("target")
        try FileManager.default.createDirectory(atPath: notes, withIntermediateDirectories: false)
        writeFile(notes + "/journal", Array("Dear diary,\n".utf8))
        try FileManager.default.createDirectory(atPath: cargo + "/debug", withIntermediateDirectories: true)
        let cargoTag = Array("Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by cargo.\n".utf8)
        writeFile(cargo + "/CACHEDIR.TAG", cargoTag)
        for folder in [notes, cargo] {
            #expect(throws: BlobCacheError.self, "\(folder)") { try BlobCache(directory: folder) }
            #expect(throws: BlobCacheError.self, "\(folder)") { try BlobCache.saveDefaultLimits(.init(maxEntries: 5), in: folder) }
        }
        #expect(readFile(notes + "/journal") == Array("Dear diary,\n".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: notes) == ["journal"])
        #expect(readFile(cargo + "/CACHEDIR.TAG") == cargoTag)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cargo).sorted() == ["CACHEDIR.TAG", "debug"])
    }

    @Test("directories that hold only what a cache writes open: limits saved first, an untagged cache whose journal was lost")
    func cacheShapedDirectoriesOpen() throws {
        let dir = TemporaryDirectory()
        let fresh = dir.appending("fresh")
        try FileManager.default.createDirectory(atPath: fresh, withIntermediateDirectories: false)
        try BlobCache.saveDefaultLimits(.init(maxEntries: 5), in: fresh)
        let cache = try BlobCache(directory: fresh)
        #expect(try cache.totals().limits.maxEntries == 5)
        try cache.close()

        let old = dir.appending("old")
        let value = Samples.random(500, seed: 7)
        let earlier = try BlobCache(directory: old)
        try earlier.set(value, forKey: "k")
        try earlier.close()
        for name in ["CACHEDIR.TAG", "journal"] { try FileManager.default.removeItem(atPath: old + "/" + name) }
        let rebuilt = try BlobCache(directory: old)
        #expect(same(try rebuilt.bytes(for: BlobID(hashing: value)), value))
        try rebuilt.close()
    }
}
