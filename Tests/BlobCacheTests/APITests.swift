import Foundation
import Testing
@testable import BlobCache

@Suite("Library API")
struct APITests {
    struct Profile: Codable, Equatable { var name: String; var tags: [String] }

    @Test("the Codable layer round-trips typed values; equal values share a blob")
    func codable() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let profiles = CodableCache<Profile>(cache)
        let ada = Profile(name: "Ada", tags: ["math", "engines"])
        try profiles.set(ada, forKey: "user/1")
        try profiles.set(ada, forKey: "user/2")
        #expect(try profiles.value(forKey: "user/1") == ada)
        #expect(try profiles.value(forKey: "missing") == nil)
        #expect(try cache.totals().blobs == 1)
        try cache.set(Array("not json".utf8), forKey: "user/3")
        #expect(throws: DecodingError.self) { try profiles.value(forKey: "user/3") }
    }

    @Test("the Codable layer takes any encoder pair, expiry per set, namespaces and the single-flight form")
    func codableChoices() async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        let ada = Profile(name: "Ada", tags: ["math"])
        let plists = CodableCache<Profile>(cache, encoder: PropertyListEncoder(), decoder: PropertyListDecoder())
        try plists.set(ada, forKey: "p", expiry: .after(.seconds(5)))
        #expect(try plists.value(forKey: "p") == ada)
        #expect(try cache.bytes(forKey: "p").map { Array($0.prefix(6)) } == Array("bplist".utf8), "a binary property list")
        #expect(throws: DecodingError.self) { try CodableCache<Profile>(cache).value(forKey: "p") }
        clock.advance(by: .seconds(6))
        #expect(try plists.value(forKey: "p") == nil, "expired")
        let users = CodableCache<Profile>(cache.namespace("users"))
        let loaded = try await users.value(forKey: "1") { ada }
        #expect(loaded == ada)
        #expect(try users.value(forKey: "1") == ada)
        #expect(try cache.bytes(forKey: "1") == nil, "stored in the namespace")
        try CodableCache<Profile>(cache).set(ada, forKey: "only-outside")
        #expect(try users.value(forKey: "only-outside") == nil, "a namespace's miss is a miss, not the cache's key")
        #expect(try await users.value(forKey: "1") { Issue.record("loaded a hit"); return ada } == ada)
    }

    @Test("async functions work from tasks running at once")
    func asyncAccess() async throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<32 {
                group.addTask { try await cache.async.set(Samples.random(3000 + n, seed: UInt64(n)), forKey: "k\(n)") }
            }
            try await group.waitForAll()
        }
        for n in 0..<32 {
            #expect(same(try await cache.async.bytes(forKey: "k\(n)"), Samples.random(3000 + n, seed: UInt64(n))))
        }
        let id = try await cache.async.store([1, 2, 3])
        #expect(try await cache.async.bytes(for: id) == [1, 2, 3])
        #expect(try cache.keys().count == 32, "content-addressed entries are not listed as keys")
    }

    @Test("threads setting and getting at once see consistent values")
    func threads() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.maxStoredBytes = 400_000 })
        let value: @Sendable (Int) -> [UInt8] = { n in Samples.random(1000 + n % 7 * 5000, seed: UInt64(n % 50)) }
        // Every value ever written under each key, by id: a read must return one of them.
        let written = (0..<300).reduce(into: [Int: Set<BlobID>]()) { $0[$1 % 50, default: []].insert(BlobID(hashing: value($1))) }
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for n in 0..<300 {
                do {
                    try cache.set(value(n), forKey: "k\(n % 50)")
                    let other = (n + worker * 13) % 50
                    if let read = try cache.bytes(forKey: "k\(other)") {
                        #expect(written[other]!.contains(BlobID(hashing: read)), "k\(other)")
                    }
                } catch {
                    Issue.record("worker \(worker): \(error)")
                }
            }
        }
        #expect(try cache.totals().storedBytes <= 400_000)
    }

    @Test("keys are validated; bad keys never cost stored data")
    func keyValidation() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        try cache.set([1], forKey: "good")
        #expect(throws: BlobCacheError.invalidKey(reason: "a key must not be empty")) { try cache.set([2], forKey: "") }
        #expect(throws: BlobCacheError.self) { try cache.set([2], forKey: "\u{0}x") }
        let long = String(repeating: "k", count: 64 * 1024)
        try cache.set([3], forKey: long)
        try cache.close()
        let reopened = try BlobCache(directory: dir.path, configuration: .testing())
        #expect(try reopened.bytes(forKey: long) == [3])
        #expect(try reopened.bytes(forKey: "good") == [1])
        try reopened.close()
        #expect(throws: BlobCacheError.closed) { try reopened.bytes(forKey: "good") }
    }

    @Test("a failed journal write stops the cache until reopen; nothing journaled is lost")
    func journalWriteFailure() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let kept = try cache.set(Samples.random(500, seed: 1), forKey: "kept")
        // Make the journal's descriptor read-only under the cache: its next append fails (EBADF).
        // (The journal itself, read-only: a catch-up that fstats it sees the same file.)
        let readOnly = open(dir.appending("journal"), O_RDONLY)
        let journalFD = try cache.engine.withState { $0.journal.descriptor.rawValue }
        #expect(dup2(readOnly, journalFD) == journalFD)
        close(readOnly)
        #expect(throws: BlobCacheError.self) { try cache.set(Samples.random(500, seed: 1), forKey: "lost") }
        do {
            _ = try cache.bytes(forKey: "kept")
            Issue.record("expected needsReopen")
        } catch let BlobCacheError.needsReopen(path, _) {
            #expect(path == dir.path)
        }
        try cache.close()
        let reopened = try BlobCache(directory: dir.path, configuration: .testing())
        #expect(try reopened.keys() == ["kept"])
        #expect(try reopened.bytes(forKey: "kept").map { BlobID(hashing: $0) } == kept)
        try reopened.set([1], forKey: "after")
        #expect(try reopened.data(forKey: "after") == Data([1]))
    }

    @Test("durability powerLossSafe and the zlib codec work end to end")
    func durableZlib() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing {
            $0.durability = .powerLossSafe
            $0.codec = .zlib(level: 9)
        })
        let text = Samples.compressible(200_000)
        try cache.set(text, forKey: "text")
        #expect(try cache.entry(forKey: "text")?.codec == "zlib")
        #expect(try cache.totals().compressionRatio > 2)
        try cache.close()
        #expect(same(try BlobCache(directory: dir.path).bytes(forKey: "text"), text))
    }
}
