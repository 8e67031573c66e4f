import BlobCache
import BlobCacheRemote
import Dispatch
import Foundation
import Testing

/// Races between the remote tier and local operations, ordered by a gate in the store.
@Suite(.serialized)
struct RemoteRaceTests {
    @Test("a removed key does not come back from the remote while its removal waits in the queue",
          .enabled(if: RemoteTierTests.haveRedis, "redis-server is not installed"))
    func removedKeyStaysRemoved() throws {
        let redis = try LoopbackServer.redis()
        let real = RedisRemoteStore(port: redis.port, prefix: "race")
        let gated = GatedStore(real) { method, _ in method == "delete" }
        let scratch = Scratch()
        let cache = try BlobCache(directory: scratch.sub("a"), configuration: RemoteTierTests.configuration(gated))
        try cache.set(Array("old".utf8), forKey: "k")
        cache.flushRemote()
        #expect(try real.exists(.key("k")))

        try cache.removeValue(forKey: "k")
        gated.arrived.wait()                       // the remote delete is under way, not done
        #expect(try cache.bytes(forKey: "k") == nil)
        #expect(try cache.entry(forKey: "k") == nil)
        gated.release.signal()
        cache.flushRemote()
        #expect(try !real.exists(.key("k")))
        #expect(try cache.bytes(forKey: "k") == nil)
        try cache.close()
    }

    @Test("a remote value written back never replaces a set made while it was being fetched",
          .enabled(if: RemoteTierTests.haveRedis, "redis-server is not installed"))
    func writeBackDoesNotOverwrite() throws {
        let redis = try LoopbackServer.redis()
        let real = RedisRemoteStore(port: redis.port, prefix: "race2")
        let scratch = Scratch()
        let writer = try BlobCache(directory: scratch.sub("a"), configuration: RemoteTierTests.configuration(real))
        try writer.set(Array("remote, older".utf8), forKey: "k")
        try writer.close()

        let gated = GatedStore(real) { method, object in method == "get" && object.kind == .blob }
        let cache = try BlobCache(directory: scratch.sub("b"), configuration: RemoteTierTests.configuration(gated))
        let done = DispatchSemaphore(value: 0)
        let fetched = LockedData()
        DispatchQueue.global().async {
            fetched.set(Data((try? cache.bytes(forKey: "k")) ?? []))
            done.signal()
        }
        gated.arrived.wait()                       // the read is fetching the remote blob
        try cache.set(Array("local, newer".utf8), forKey: "k", pinned: true)
        gated.release.signal()
        done.wait()
        #expect(Array(fetched.get()) == Array("remote, older".utf8))
        #expect(try cache.bytes(forKey: "k") == Array("local, newer".utf8))
        #expect(try cache.entry(forKey: "k")?.pinned == true)
        try cache.close()
    }
}
