import BlobCache
import BlobCacheRemote
import Foundation
import Testing

/// A slot map from a hostile node is refused within the call's deadline: too many bytes, a host
/// name too long, or ranges assigning more slots than a cluster has.
struct RedisSlotMapLimitTests {
    static let object = RemoteObject.blob(BlobID(hashing: Array("slot-map".utf8)))

    /// A cluster store whose only seed is `server`.
    static func store(_ server: FakeRedis, timeout: Duration = .seconds(5)) -> RedisRemoteStore {
        RedisRemoteStore(cluster: [RedisEndpoint(host: "127.0.0.1", port: server.port)], prefix: "t", timeout: timeout)
    }

    @Test("a slot map still arriving past 8 MiB is refused then, not gathered until the deadline")
    func endlessSlotMap() throws {
        // An array of 65,536 arrays of 65,536 integers (16 GiB) announced; 12 MiB of it sent.
        var block = Array(":0\r\n".utf8)
        while block.count < 65536 * 4 { block += block }
        block = Array("*65536\r\n".utf8) + block
        var bytes = Array("*65536\r\n".utf8)
        while bytes.count < 12 << 20 { bytes += block }
        let reply = bytes
        let server = try FakeRedis { _, _, command in command.first == "CLUSTER" ? .reply(reply) : .reply(FakeRedis.null) }
        let store = Self.store(server, timeout: .seconds(10))
        #expect {
            try store.get(Self.object)
        } throws: { error in
            "\(error)".contains("a slot map reply larger than 8 MiB")
        }
    }

    @Test("a host name in a slot map longer than 1 KiB is refused from its length")
    func longHostName() throws {
        let host = String(repeating: "h", count: 2000)
        let reply = Array("*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$2000\r\n\(host)\r\n:7000\r\n".utf8)
        let server = try FakeRedis { _, _, command in command.first == "CLUSTER" ? .reply(reply) : .reply(FakeRedis.null) }
        #expect {
            try Self.store(server).get(Self.object)
        } throws: { error in
            "\(error)".contains("a slot map reply that is too large")
        }
    }

    @Test("ranges that overlap, or assign more than 16,384 slots, are refused before any slot is filled twice",
          arguments: [2, 4096])
    func overlappingRanges(count: Int) throws {
        let server = try FakeRedis { _, _, _ in .reply(FakeRedis.null) }
        let map = FakeRedis.slotMap(Array(repeating: (0, 16383, server.port), count: count))
        let hostile = try FakeRedis { _, _, command in command.first == "CLUSTER" ? .reply(map) : .reply(FakeRedis.null) }
        #expect {
            try Self.store(hostile, timeout: .seconds(2)).get(Self.object)
        } throws: { error in
            "\(error)".contains("twice") || "\(error)".contains("more than 16384 slots")
        }
    }
}
