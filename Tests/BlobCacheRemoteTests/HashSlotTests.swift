import Foundation
import BlobCacheRemote
import Testing

/// Hash slots as the Redis Cluster spec computes them.
struct HashSlotTests {
    @Test("CRC16-XMODEM of the spec's check string is 0x31C3")
    func checkValue() {
        #expect(HashSlot.crc16(Array("123456789".utf8)[...]) == 0x31C3)
        #expect(HashSlot.of(Array("123456789".utf8)) == 0x31C3 % 16384)
    }

    @Test("hash tags: the first {…} with something in it is hashed, else the whole key")
    func hashTags() {
        func slot(_ key: String) -> Int { HashSlot.of(Array(key.utf8)) }
        #expect(slot("{user1000}.following") == slot("{user1000}.followers"))
        #expect(slot("{user1000}.following") == slot("user1000"))
        #expect(String(decoding: HashSlot.hashed(Array("foo{}{bar}".utf8)), as: UTF8.self) == "foo{}{bar}")
        #expect(String(decoding: HashSlot.hashed(Array("foo{{bar}}zap".utf8)), as: UTF8.self) == "{bar")
        #expect(slot("foo{{bar}}zap") == slot("{bar"))
        #expect(String(decoding: HashSlot.hashed(Array("foo{bar}{zap}".utf8)), as: UTF8.self) == "bar")
        #expect(String(decoding: HashSlot.hashed(Array("no-close{tag".utf8)), as: UTF8.self) == "no-close{tag")
        // Known slots (CLUSTER KEYSLOT on Redis 7).
        #expect(slot("foo") == 12182)
        #expect(slot("bar") == 5061)
        #expect(slot("hello") == 866)
    }

    @Test("slots agree with CLUSTER KEYSLOT on a real cluster node", .enabled(if: RemoteTierTests.haveRedis, "redis-server is not installed"))
    func agreesWithRedis() throws {
        let node = try LoopbackServer.redisClusterNode()
        let keys = ["123456789", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "blobcache:blob:5d41402abc4b2a76b9719d911017c592",
                    "", "é{ü}", "a{b}c{d}"]
        for key in keys {
            let answer = try runProgram(LoopbackServer.redisCLIPath!, ["-p", "\(node.port)", "cluster", "keyslot", key])
            #expect(Int(answer.output.trimmingCharacters(in: .whitespacesAndNewlines)) == HashSlot.of(Array(key.utf8)), "\(key)")
        }
    }
}
