import Foundation
import Testing
@testable import BlobCache

@Suite("Observers")
struct ObserverTests {
    /// Everything delivered to `iterator` up to a marker put through the same delivery now
    /// (`prefix` and `namespace`: those the iterator's stream was made with).
    static func drain(_ iterator: inout AsyncStream<BlobCache.Change>.Iterator, of cache: BlobCache,
                      prefix: String = "", namespace: String? = nil) async -> [BlobCache.Change] {
        let marker = prefix + "\u{1}marker"
        cache.engine.changeHub.publish([.set(key: (namespace.map { String(decoding: NamespaceKey.prefix(of: $0), as: UTF8.self) } ?? "") + marker, id: BlobID(hashing: []))])
        var seen: [BlobCache.Change] = []
        // (Markers of other streams' drains are not the cache's changes.)
        while let change = await iterator.next(), change.key != marker {
            if !change.key.hasSuffix("\u{1}marker") { seen.append(change) }
        }
        return seen
    }

    @Test("prefix filters, namespaces, other opens' changes; every reason")
    func changes() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        var all = cache.changes().makeAsyncIterator()
        var avatars = cache.changes(forKeysWithPrefix: "avatar/").makeAsyncIterator()
        var namespaced = cache.namespace("ns").changes().makeAsyncIterator()
        let id = try cache.set([1], forKey: "avatar/1")
        try cache.set([2], forKey: "other", expiry: .after(.seconds(1)))
        try cache.namespace("ns").set([1], forKey: "x")
        try cache.removeValue(forKey: "avatar/1")
        clock.advance(by: .seconds(2))
        _ = try cache.bytes(forKey: "other")
        try cache.set([3], forKey: "avatar/2")
        try cache.namespace("ns").removeAll()
        try cache.removeAll()
        #expect(await Self.drain(&all, of: cache) == [
            .set(key: "avatar/1", id: id), .set(key: "other", id: BlobID(hashing: [2])),
            .removed(key: "avatar/1", reason: .explicit), .removed(key: "other", reason: .expired),
            .set(key: "avatar/2", id: BlobID(hashing: [3])), .removed(key: "avatar/2", reason: .cleared),
        ])
        #expect(await Self.drain(&avatars, of: cache, prefix: "avatar/") == [
            .set(key: "avatar/1", id: id), .removed(key: "avatar/1", reason: .explicit),
            .set(key: "avatar/2", id: BlobID(hashing: [3])), .removed(key: "avatar/2", reason: .cleared),
        ])
        #expect(await Self.drain(&namespaced, of: cache, namespace: "ns") == [.set(key: "x", id: id), .removed(key: "x", reason: .cleared)])

        // Another open's changes arrive when this one catches up (its next operation).
        let other = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) { $0.maxEntries = 1 })
        try other.set([5], forKey: "a")
        try other.set([6], forKey: "b")   // evicts a
        _ = try cache.contains("b")
        let fromOther = await Self.drain(&all, of: cache)
        #expect(fromOther == [
            .set(key: "a", id: BlobID(hashing: [5])), .set(key: "b", id: BlobID(hashing: [6])),
            .removed(key: "a", reason: .evicted),
        ])
    }

    @Test("a consumer that falls behind loses the oldest changes; the cache never waits")
    func slowConsumer() async throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        var slow = cache.changes().makeAsyncIterator()
        for n in 0..<(ChangeHub.bufferLimit + 500) { try cache.set([UInt8(n % 256)], forKey: "k\(n)") }
        let seen = await Self.drain(&slow, of: cache)
        #expect(seen.count == ChangeHub.bufferLimit - 1, "the marker took the last place")
        #expect(seen.first?.key == "k501" && seen.last?.key == "k\(ChangeHub.bufferLimit + 499)")
    }

    @Test("streams end when the cache closes")
    func endsAtClose() async throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let consumer = Task { var count = 0; for await _ in cache.changes() { count += 1 }; return count }
        try cache.set([1], forKey: "k")
        try cache.close()
        _ = await consumer.value   // returns: the stream ended
        var late = cache.changes().makeAsyncIterator()
        #expect(await late.next() == nil)
    }
}
