import Foundation
import Testing
@testable import BlobCache

/// A FIFO planted under one of the cache's own names never blocks anything: every open of a
/// file in DIR is non-blocking (`FileIO.open`), so the FIFO opens at once and reads as empty.
/// Before, a FIFO at `DIR/index` blocked the open and fsck forever. (A test of this kind hangs,
/// rather than fails, when the fix is undone.)
@Suite("FIFOs in DIR")
struct PlantedFIFOTests {
    @Test("a FIFO in place of one of the cache's files fails or leaves alone the open, and fsck reports it, neither blocking",
          arguments: ["index", "stats", "config", "sequence", "CACHEDIR.TAG"])
    func fifoInPlaceOfAFile(name: String) throws {
        let dir = TemporaryDirectory()
        var cache = try BlobCache(directory: dir.path, configuration: .testing { $0.snapshotThreshold = 0 })
        try cache.set([1, 2, 3], forKey: "k")
        try cache.close()
        try? FileManager.default.removeItem(atPath: dir.appending(name))
        #expect(mkfifo(dir.appending(name), 0o600) == 0)

        var options = BlobCache.CheckOptions()
        options.lockTimeout = nil
        let report = try BlobCache.check(directory: dir.path, options: options)
        #expect(report.errors.contains(where: { $0.problem == "not-a-regular-file" }), "\(report.errors)")
        // The open refuses the directory or works beside the FIFO; either way it returns.
        do {
            cache = try BlobCache(directory: dir.path, configuration: .testing())
        } catch is BlobCacheError {
            return
        }
        #expect(try cache.bytes(forKey: "k") == [1, 2, 3])
        try cache.close()
    }

    @Test("a FIFO planted at DIR/index while the cache is in use does not block the next checkpoint, which replaces it")
    func fifoAtTheSnapshotInUse() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.checkpointMinimum = 16 << 10 })
        try cache.set([1], forKey: "first")
        #expect(mkfifo(dir.appending("index"), 0o600) == 0)
        var count = 0
        while (try? FileManager.default.attributesOfItem(atPath: dir.appending("index"))[.type] as? FileAttributeType) != .typeRegular {
            try cache.set(Samples.random(80, seed: UInt64(count)), forKey: "key-\(count)")
            count += 1
            try #require(count < 2_000, "no checkpoint was written")
        }
        #expect(try cache.bytes(forKey: "first") == [1])
        try cache.close()
    }
}
