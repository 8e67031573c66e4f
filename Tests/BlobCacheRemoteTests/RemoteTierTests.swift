import BlobCache
import BlobCacheRemote
import Foundation
import Testing

/// The remote tier against real servers on loopback: nginx (WebDAV PUT) and redis-server.
@Suite(.serialized)
struct RemoteTierTests {
    static let haveNginx = LoopbackServer.nginxPath != nil
    static let haveRedis = LoopbackServer.redisPath != nil && LoopbackServer.redisCLIPath != nil

    static func configuration(_ store: any RemoteStore, clock: (any CacheClock)? = nil) -> BlobCache.Configuration {
        var configuration = BlobCache.Configuration()
        configuration.remote = store
        if let clock { configuration.clock = clock }
        return configuration
    }

    static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        return (0..<count).map { _ in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }

    /// Values of several sizes: packed locally, loose locally, and one that compresses well.
    static let values: [(String, [UInt8])] = [
        ("small", Array("hello, remote".utf8)),
        ("random-4k", random(4096, seed: 1)),
        ("random-300k", random(300_000, seed: 2)),
        ("zeros-1m", [UInt8](repeating: 0, count: 1 << 20)),
    ]

    /// Sets every value in one cache, then reads them in another on another directory.
    func share(through store: any RemoteStore) throws {
        let scratch = Scratch()
        let writer = try BlobCache(directory: scratch.sub("a"), configuration: Self.configuration(store))
        for (key, value) in Self.values { try writer.set(value, forKey: key) }
        try writer.namespace("team").set(Array("namespaced".utf8), forKey: "small")
        writer.flushRemote()
        #expect(writer.statistics().remote.writes == Self.values.count + 1)
        #expect(writer.statistics().remote.errors == 0)
        try writer.close()

        let reader = try BlobCache(directory: scratch.sub("b"), configuration: Self.configuration(store))
        for (key, value) in Self.values { #expect(try reader.bytes(forKey: key) == value, "\(key)") }
        #expect(try reader.namespace("team").bytes(forKey: "small") == Array("namespaced".utf8))
        #expect(try reader.bytes(forKey: "never-set") == nil)
        let remote = reader.statistics().remote
        #expect(remote.hits == Self.values.count + 1)
        #expect(remote.misses == 1)
        #expect(remote.rejected == 0)
        try reader.close()

        // Written back: the second directory answers without the remote now.
        let local = try BlobCache(directory: scratch.sub("b"))
        for (key, value) in Self.values { #expect(try local.bytes(forKey: key) == value) }
        try local.close()
    }

    @Test("two caches on two directories share values through nginx, in both layouts", .enabled(if: haveNginx, "nginx is not installed"),
          arguments: HTTPRemoteStore.Layout.allCases)
    func shareThroughNginx(layout: HTTPRemoteStore.Layout) throws {
        let nginx = try LoopbackServer.nginx()
        let store = HTTPRemoteStore(baseURL: nginx.httpURL + "/blobcache", layout: layout)
        try share(through: store)
        // The blobs are where the layout says, in the loose-blob format.
        let id = BlobID(hashing: Self.values[1].1)
        let path = layout == .subdirs ? "\(id.hex.prefix(2))/\(id.hex.dropFirst(2))" : id.hex
        let file = try Data(contentsOf: URL(fileURLWithPath: "\(nginx.root)/blobcache/\(path)"))
        #expect(Array(file.prefix(4)) == Array("BCBL".utf8))
        #expect(FileManager.default.fileExists(atPath: "\(nginx.root)/blobcache/keys"))
    }

    @Test("two caches on two directories share values through Redis", .enabled(if: haveRedis, "redis-server is not installed"))
    func shareThroughRedis() throws {
        let redis = try LoopbackServer.redis()
        try share(through: RedisRemoteStore(port: redis.port, prefix: "share"))
        let keys = try runProgram(LoopbackServer.redisCLIPath!, ["-p", "\(redis.port)", "--scan", "--pattern", "share:*"]).output
        #expect(keys.split(separator: "\n").filter { $0.hasPrefix("share:blob:") }.count == Self.values.count + 1)
        #expect(keys.split(separator: "\n").filter { $0.hasPrefix("share:key:") }.count == Self.values.count + 1)
    }

    @Test("a damaged or planted remote blob, and a damaged key record, are rejected and not written back",
          .enabled(if: haveNginx, "nginx is not installed"))
    func damagedRemoteBlob() throws {
        let nginx = try LoopbackServer.nginx()
        let store = HTTPRemoteStore(baseURL: nginx.httpURL, layout: .flat)
        let scratch = Scratch()
        let writer = try BlobCache(directory: scratch.sub("a"), configuration: Self.configuration(store))
        let victim = Self.random(10_000, seed: 7), other = Self.random(10_000, seed: 8)
        try writer.set(victim, forKey: "flipped")
        try writer.set(other, forKey: "planted")
        try writer.set(victim, forKey: "record")
        writer.flushRemote()
        try writer.close()
        let victimFile = "\(nginx.root)/\(BlobID(hashing: victim).hex)"
        let otherFile = "\(nginx.root)/\(BlobID(hashing: other).hex)"

        // One flipped bit in the victim's blob; the other value's id now serves the victim's
        // (intact, self-consistent) image; the third key's record loses a byte.
        var image = try [UInt8](Data(contentsOf: URL(fileURLWithPath: victimFile)))
        let intact = image
        image[image.count / 2] ^= 0x10
        try Data(image).write(to: URL(fileURLWithPath: victimFile))
        try Data(intact).write(to: URL(fileURLWithPath: otherFile))
        let recordFile = "\(nginx.root)/keys/\(RemoteObject.key("record").hex)"
        let record = try Data(contentsOf: URL(fileURLWithPath: recordFile))
        try record.dropLast().write(to: URL(fileURLWithPath: recordFile))

        let reader = try BlobCache(directory: scratch.sub("b"), configuration: Self.configuration(store))
        #expect(try reader.bytes(forKey: "flipped") == nil)
        #expect(try reader.bytes(forKey: "planted") == nil)
        #expect(try reader.bytes(forKey: "record") == nil)
        #expect(reader.statistics().remote.rejected == 3)
        #expect(reader.statistics().remote.hits == 0)
        #expect(try reader.entries().isEmpty)
        try reader.close()
    }

    @Test("the remote going down never fails a local operation; it is skipped for the backoff, then used again",
          .enabled(if: haveRedis, "redis-server is not installed"))
    func remoteGoesDown() throws {
        let redis = try LoopbackServer.redis()
        let store = RedisRemoteStore(port: redis.port, prefix: "down", timeout: .seconds(1))
        let clock = ManualClock(start: Date())
        var configuration = Self.configuration(store, clock: clock)
        configuration.remoteBackoff = .seconds(30)
        let scratch = Scratch()
        let cache = try BlobCache(directory: scratch.sub("a"), configuration: configuration)
        try cache.set(Array("before".utf8), forKey: "before")
        cache.flushRemote()
        #expect(cache.statistics().remote.writes == 1)

        redis.stop()
        // The first remote call (the write behind this set) fails and opens the circuit.
        try cache.set(Array("first".utf8), forKey: "first")
        cache.flushRemote()
        #expect(cache.statistics().remote.errors == 1)
        // Every local operation goes on; the remote is not asked.
        for index in 0..<20 {
            try cache.set(Self.random(100, seed: UInt64(index)), forKey: "during-\(index)")
            #expect(try cache.bytes(forKey: "during-\(index)") == Self.random(100, seed: UInt64(index)))
            #expect(try cache.bytes(forKey: "missing-\(index)") == nil)
            try cache.removeValue(forKey: "missing-\(index)")
        }
        cache.flushRemote()
        var remote = cache.statistics().remote
        #expect(remote.errors == 1)
        #expect(remote.droppedWrites == 41)
        #expect(remote.skippedReads == 20)
        #expect(remote.writes == 1)

        // Back: within the backoff it is still skipped; after it, used again.
        try redis.start()
        #expect(try cache.bytes(forKey: "missing-again") == nil)
        #expect(cache.statistics().remote.skippedReads == 21)
        clock.advance(by: .seconds(31))
        try cache.set(Array("after".utf8), forKey: "after")
        cache.flushRemote()
        remote = cache.statistics().remote
        #expect(remote.writes == 2)
        #expect(remote.errors == 1)
        try cache.close()

        let other = try BlobCache(directory: scratch.sub("b"), configuration: Self.configuration(store, clock: clock))
        #expect(try other.bytes(forKey: "after") == Array("after".utf8))
        try other.close()
    }

    @Test("a server that is not there: local operations succeed, and the remote is skipped after the first failure",
          .enabled(if: haveNginx, "nginx is not installed"))
    func nothingListening() throws {
        let nginx = try LoopbackServer.nginx()
        nginx.stop()
        let scratch = Scratch()
        let cache = try BlobCache(directory: scratch.sub("a"), configuration: Self.configuration(HTTPRemoteStore(baseURL: nginx.httpURL)))
        try cache.set(Array("value".utf8), forKey: "k")
        cache.flushRemote()
        #expect(try cache.bytes(forKey: "k") == Array("value".utf8))
        #expect(try cache.bytes(forKey: "absent") == nil)
        try cache.close()
        let remote = cache.statistics().remote
        #expect(remote.errors == 1)
        #expect(remote.droppedWrites == 1)
        #expect(remote.skippedReads == 1)
    }

    @Test("expiry times reach Redis as TTLs, and an expired remote record is a miss", .enabled(if: haveRedis, "redis-server is not installed"))
    func ttlsReachRedis() throws {
        let redis = try LoopbackServer.redis()
        let store = RedisRemoteStore(port: redis.port, prefix: "ttl")
        let scratch = Scratch()
        let cache = try BlobCache(directory: scratch.sub("a"), configuration: Self.configuration(store))
        try cache.set(Array("short".utf8), forKey: "short", expiry: .after(.seconds(100)))
        try cache.set(Array("forever".utf8), forKey: "forever")
        cache.flushRemote()
        try cache.close()
        func pttl(_ key: String) throws -> Int {
            let reply = try runProgram(LoopbackServer.redisCLIPath!, ["-p", "\(redis.port)", "PTTL", store.redisKey(of: .key(key))])
            return Int(reply.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -99
        }
        let short = try pttl("short")
        #expect(short > 90_000 && short <= 100_000, "PTTL \(short)")
        #expect(try pttl("forever") == -1)

        // The reader's clock is past the expiry (Redis' is not): the record is a miss.
        let later = ManualClock(start: Date().addingTimeInterval(200))
        let reader = try BlobCache(directory: scratch.sub("b"), configuration: Self.configuration(store, clock: later))
        #expect(try reader.bytes(forKey: "short") == nil)
        #expect(try reader.bytes(forKey: "forever") == Array("forever".utf8))
        // Written back with the remote's expiry.
        let entry = try #require(try reader.entry(forKey: "forever"))
        #expect(entry.expiry == nil)
        try reader.close()
        let expiring = try BlobCache(directory: scratch.sub("c"), configuration: Self.configuration(store))
        #expect(try expiring.bytes(forKey: "short") == Array("short".utf8))
        let written = try #require(try expiring.entry(forKey: "short")?.expiry)
        #expect(abs(written.timeIntervalSinceNow - 100) < 10)
        try expiring.close()
    }

    @Test("a remove reaches the remote; a full write-behind queue drops the write, not the set", .enabled(if: haveRedis, "redis-server is not installed"))
    func removesAndQueueLimit() throws {
        let redis = try LoopbackServer.redis()
        let store = RedisRemoteStore(port: redis.port, prefix: "rm")
        let scratch = Scratch()
        let cache = try BlobCache(directory: scratch.sub("a"), configuration: Self.configuration(store))
        try cache.set(Array("gone soon".utf8), forKey: "k")
        cache.flushRemote()
        #expect(try store.exists(.key("k")))
        try cache.removeValue(forKey: "k")
        cache.flushRemote()
        #expect(try !store.exists(.key("k")))
        try cache.close()

        var small = Self.configuration(store)
        small.remoteQueueLimit = 10
        let limited = try BlobCache(directory: scratch.sub("b"), configuration: small)
        try limited.set(Self.random(11, seed: 3), forKey: "too-big-for-the-queue")
        limited.flushRemote()
        #expect(try limited.bytes(forKey: "too-big-for-the-queue") == Self.random(11, seed: 3))
        #expect(limited.statistics().remote.droppedWrites == 1)
        #expect(try !store.exists(.key("too-big-for-the-queue")))
        try limited.close()
    }

    @Test("a remote value larger than the local byte cap is returned by no read and not written back", .enabled(if: haveRedis, "redis-server is not installed"))
    func localCapsHold() throws {
        let redis = try LoopbackServer.redis()
        let store = RedisRemoteStore(port: redis.port, prefix: "caps")
        let scratch = Scratch()
        let writer = try BlobCache(directory: scratch.sub("a"), configuration: Self.configuration(store))
        try writer.set(Self.random(200_000, seed: 9), forKey: "big")
        try writer.close()
        var capped = Self.configuration(store)
        capped.maxStoredBytes = 100_000
        let reader = try BlobCache(directory: scratch.sub("b"), configuration: capped)
        #expect(try reader.bytes(forKey: "big") == nil)
        #expect(try reader.totals().storedBytes == 0)
        #expect(reader.statistics().remote.rejected == 1)
        try reader.close()
    }
}
