import Foundation
import Testing
@testable import BlobCache

/// A cache of many segments needs a bounded number of descriptors: segments
/// are opened when first read and only the most recently used stay open.
@Suite("Bounded resources")
struct BoundedResourcesTests {
    /// Values of 40,000 incompressible bytes with 64 KiB segments: one value per segment.
    private static let valueSize = 40_000

    /// Runs `blobcache --dir root ARGUMENTS` with at most `limit` open descriptors.
    private func runLimited(_ root: String, descriptors limit: Int, _ arguments: [String]) throws -> CLI.Result {
        let tool = ChildProcess.productsDirectory.appendingPathComponent("blobcache").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "ulimit -n \(limit) && exec \"$0\" \"$@\"", tool, "--dir", root] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CLI.Result(status: process.terminationStatus, stdout: stdout, stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// 600 segments and 128 descriptors in every run; a large cache's 10,000 segments and a 256-descriptor limit with
    /// `BLOBCACHE_SEGMENTS=10000 BLOBCACHE_DESCRIPTORS=256 swift test --filter BoundedResources`
    /// (400 MB of segments: a measurement, not for every run).
    private static let environment = ProcessInfo.processInfo.environment
    /// (300 under a sanitizer, which sets BLOBCACHE_FAULT_STRIDE: still more than the descriptors.)
    private static let count = environment["BLOBCACHE_SEGMENTS"].flatMap(Int.init)
        ?? (environment["BLOBCACHE_FAULT_STRIDE"] == nil ? 600 : 300)
    private static let descriptors = environment["BLOBCACHE_DESCRIPTORS"].flatMap(Int.init) ?? 128

    @Test("a cache of many segments (600; 300 under a sanitizer) opens, reads, exports and checks with few descriptors (128)")
    func manySegmentsFewDescriptors() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        let count = Self.count
        var configuration = BlobCache.Configuration()
        configuration.packSegmentLimit = 64 << 10
        do {
            let cache = try BlobCache(directory: root, configuration: configuration)
            for n in 0..<count { try cache.set(Samples.random(Self.valueSize, seed: UInt64(n)), forKey: "k\(n)") }
            // Writing holds few segments open too (none is kept open per segment written).
            #expect(try cache.engine.withState { $0.store.heldSegmentCount } <= BlobStore.openSegmentLimit + 2)
            try cache.close()
        }
        let segments = try FileManager.default.contentsOfDirectory(atPath: root + "/packs").filter { $0.hasSuffix(".pack") }
        #expect(segments.count >= count)

        let destination = dir.appending("out")
        let export = try runLimited(root, descriptors: Self.descriptors, ["export", destination])
        #expect(export.status == 0, "\(export.stderr)")
        for n in stride(from: 0, to: count, by: 37) {
            #expect(same(readFile(destination + "/k\(n)"), Samples.random(Self.valueSize, seed: UInt64(n))), "k\(n)")
        }
        let check = try runLimited(root, descriptors: Self.descriptors, ["fsck"])
        print("bounded resources: \(segments.count) segments, export and fsck with ulimit -n \(Self.descriptors): exit \(export.status), \(check.status)")
        #expect(check.status == 0, "\(check.stderr)")

        // In the library too: every value reads back through a bounded set of open segments.
        let cache = try BlobCache(directory: root, configuration: configuration)
        for n in 0..<count {
            #expect(same(try cache.bytes(forKey: "k\(n)"), Samples.random(Self.valueSize, seed: UInt64(n))))
        }
        #expect(try cache.engine.withState { $0.store.openSegmentCount } <= BlobStore.openSegmentLimit)
        try cache.close()
    }
}
