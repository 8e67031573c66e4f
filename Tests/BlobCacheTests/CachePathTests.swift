import Foundation
import SystemPackage
import Testing
@testable import BlobCache

@Suite("Cache paths")
struct CachePathTests {
    /// The paths the cache makes: a root as a user may spell it, then names joined to it.
    static let roots = ["/var/cache/app", "/var/cache/app/", "/", "cache", "./cache//app", "", "/tmp//x/", ".", "..", "//",
                        "/a/./b", "/a"]
    static let names = ["journal", "CACHEDIR.TAG", "5", "000001.pack", "tmp.1f.2e.3d"]

    @Test("a path joined, and taken apart again, reads as FilePath's would", arguments: roots)
    func agreesWithFilePath(root: String) {
        let path = CachePath(normalizing: root)
        var reference = FilePath(root)
        #expect(path.isAbsolute == reference.isAbsolute)
        #expect(path.lastComponent == reference.lastComponent?.string)
        #expect(path.removingLastComponent().string == reference.removingLastComponent().string)
        var joined = path
        for name in Self.names {
            joined = joined.appending(name)
            reference.append(name)
            #expect(joined.string == reference.string)
            #expect(joined.lastComponent == name)
            #expect(joined.removingLastComponent().string == reference.removingLastComponent().string)
        }
    }

    @Test("a cache directory given with ., .. and // in it is created, used and found again")
    func directoryWithDots() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.appending("a/../b/./c//"))
        try cache.set(Samples.random(300, seed: 1), forKey: "k")
        try cache.close()
        #expect(FileManager.default.fileExists(atPath: dir.appending("b/c/journal")))
        let again = try BlobCache(directory: dir.appending("b/c"))
        #expect(same(try again.bytes(forKey: "k"), Samples.random(300, seed: 1)))
        try again.close()
    }

    @Test("a blob's loose path, shard directories and staging names hang together under any root", arguments: ["/c/", "/", "", "c"])
    func looseLayout(root: String) {
        let files = CacheFiles(root: CachePath(normalizing: root))
        let id = BlobID(hex: "5d41402abc4b2a76b9719d911017c592")!
        let loose = files.loosePath(of: id)
        // Built in one string, it must equal the path joined name by name (scans compare them).
        #expect(loose == files.objects.appending("5").appending("d").appending(id.hex))
        #expect(loose.lastComponent == id.hex)
        let shards = files.shardDirectories(of: id)
        #expect(shards.lower == loose.removingLastComponent())
        #expect(shards.upper == shards.lower.removingLastComponent())
        #expect(shards.upper.removingLastComponent() == files.objects)
        let staged = files.stagingPath(beside: loose)
        #expect(staged.removingLastComponent() == shards.lower)
        #expect(CacheFiles.isStagingName(staged.lastComponent ?? ""))
        #expect(files.segmentPath(1).removingLastComponent() == files.packs)
    }
}
