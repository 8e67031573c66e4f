import Foundation
import Testing
@testable import BlobCache

@Suite("Namespaces")
struct NamespaceTests {
    @Test("keys are isolated per namespace; blobs are shared; the cache's own keys are apart")
    func isolation() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let a = cache.namespace("a"), b = cache.namespace("b")
        let value = Samples.random(3000)
        try a.set(value, forKey: "k")
        try b.set(value, forKey: "k")
        try cache.set([9], forKey: "k")
        #expect(try a.bytes(forKey: "k") == value && b.bytes(forKey: "k") == value)
        #expect(try cache.bytes(forKey: "k") == [9])
        #expect(try cache.totals().blobs == 2, "a and b share one blob")
        try a.removeValue(forKey: "k")
        #expect(try a.contains("k") == false && b.contains("k") && cache.contains("k"))
        try b.set([1], forKey: "x")
        #expect(try b.keys().sorted() == ["k", "x"])
        #expect(try cache.keys() == ["k"], "namespaced keys are not the cache's")
        try b.removeAll()
        #expect(try b.keys().isEmpty && cache.keys() == ["k"])
        #expect(try cache.totals().blobs == 1)
        #expect(throws: BlobCacheError.self) { try cache.namespace("").set([1], forKey: "k") }
        // Two names Swift compares equal but whose bytes differ are two namespaces.
        try cache.namespace("caf\u{E9}").set([1], forKey: "k")
        try cache.namespace("cafe\u{301}").set([2], forKey: "k")
        #expect(try cache.namespace("caf\u{E9}").bytes(forKey: "k") == [1])
        #expect(try cache.namespace("cafe\u{301}").bytes(forKey: "k") == [2])
        #expect(try cache.namespaceTotals()["caf\u{E9}"]?.entries == 2, "listed under one name, figures added up")
        #expect(throws: BlobCacheError.self) { try cache.namespace("bad\u{0}name").bytes(forKey: "k") }
    }

    @Test("totals count a namespace's distinct blobs; they survive a reopen (snapshot and journal)", arguments: [false, true])
    func totals(snapshot: Bool) throws {
        let dir = TemporaryDirectory()
        let configuration = BlobCache.Configuration.testing { $0.snapshotThreshold = snapshot ? 0 : .max }
        var cache = try BlobCache(directory: dir.path, configuration: configuration)
        let one = Samples.random(2000), two = Samples.random(5000, seed: 2)
        try cache.namespace("n").set(one, forKey: "a")
        try cache.namespace("n").set(one, forKey: "b")
        try cache.namespace("n").set(two, forKey: "c")
        try cache.namespace("m").set(two, forKey: "c")
        let expected = try cache.namespace("n").totals()
        #expect(expected.entries == 3 && expected.blobs == 2 && expected.logicalBytes == 7000)
        #expect(try expected.storedBytes == cache.totals().storedBytes, "n uses both blobs")
        try cache.close()
        cache = try BlobCache(directory: dir.path, configuration: configuration)
        #expect(cache.openReport.restoredFromSnapshot == snapshot)
        #expect(try cache.namespace("n").totals() == expected)
        #expect(try cache.namespace("m").totals().entries == 1)
    }

    @Test("a namespace's byte cap evicts its own least recently used entries, within the global cap")
    func caps() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.eviction = .lru })
        let small = cache.namespace("small"), other = cache.namespace("other")
        for n in 0..<5 { try other.set(Samples.random(4000, seed: UInt64(100 + n)), forKey: "o\(n)") }
        for n in 0..<5 { try small.set(Samples.random(4000, seed: UInt64(n)), forKey: "s\(n)") }
        let perBlob = try small.totals().storedBytes / 5
        small.setLimits(maxStoredBytes: perBlob * 3)
        #expect(try small.keys() == ["s2", "s3", "s4"], "the two oldest went at once")
        _ = try small.bytes(forKey: "s2")
        try small.set(Samples.random(4000, seed: 50), forKey: "s5")
        #expect(try small.keys() == ["s4", "s2", "s5"], "s3 was least recently used")
        #expect(try small.totals().storedBytes <= perBlob * 3)
        #expect(try other.keys().count == 5, "other namespaces keep theirs")
        #expect(throws: BlobCacheError.self) { try small.set(Samples.random(20_000, seed: 9), forKey: "big") }
        #expect(try small.totals().maxStoredBytes == perBlob * 3)
        // Pinned entries over the cap stay (eviction cannot touch them); the rest goes.
        for n in 0..<4 { try small.set(Samples.random(4000, seed: UInt64(200 + n)), forKey: "p\(n)", pinned: true) }
        #expect(try small.keys().sorted() == ["p0", "p1", "p2", "p3"])
        try small.set(Samples.random(4000, seed: 300), forKey: "u")
        #expect(try small.keys().sorted() == ["p0", "p1", "p2", "p3"], "an unpinned set is evicted at once")
        #expect(try small.bytes(forKey: "p0") != nil && other.keys().count == 5)
        // Unpinned again with the same value (the namespace's bytes do not change): evicted now.
        try small.set(Samples.random(4000, seed: 200), forKey: "p0")
        #expect(try small.keys().sorted() == ["p1", "p2", "p3"], "a set lets eviction look again")
        try small.removeAll(includingPinned: true)
        small.setLimits(maxStoredBytes: nil)
        for n in 6..<10 { try small.set(Samples.random(4000, seed: UInt64(n)), forKey: "s\(n)") }
        #expect(try small.keys().count == 4)
    }

    @Test("the async and single-flight forms work on a namespace's keys")
    func asyncForms() async throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let ns = cache.namespace("ns")
        try await ns.async.set([1, 2, 3], forKey: "k")
        #expect(try await ns.async.bytes(forKey: "k") == [1, 2, 3])
        #expect(try await ns.value(forKey: "loaded") { [4] } == [4])
        #expect(try ns.bytes(forKey: "loaded") == [4])
        #expect(try cache.bytes(forKey: "loaded") == nil)
        #expect(try await ns.async.removeValue(forKey: "k"))
    }
}
