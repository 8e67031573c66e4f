import BlobCache
@testable import BlobCacheRemote
import Foundation
import Synchronization
import Testing

/// One bad node does not keep a healthy cluster down: a seed that accepts and never answers
/// gets a share of the call's time, not all of it; a node whose call failed loses only its own
/// slots; and nodes named once by a redirection do not keep idle connections for good.
@Suite(.serialized)
struct RedisClusterSeedTests {
    static func object(_ index: Int) -> RemoteObject { .blob(BlobID(hashing: Array("seed-\(index)".utf8))) }

    @Test("a silent seed listed first: calls still succeed (each within its own deadline, or it would throw)",
          .enabled(if: RemoteTierTests.haveRedis, "redis-server is not installed"))
    func silentSeedFirst() throws {
        let cluster = try LoopbackCluster()
        let silent = try FakeRedis { _, _, _ in .silent }
        let timeout = Duration.seconds(2)
        let store = try #require(try RedisLocation.store(url: "redis+cluster://127.0.0.1:\(silent.port),\(cluster.seeds)/seed", timeout: timeout))
        for index in 0..<20 {
            try store.put(Self.object(index), bytes: Array("v\(index)".utf8), expiresAt: nil)
            #expect(try store.get(Self.object(index)) == Array("v\(index)".utf8))
        }
        #expect(silent.connections >= 1)
    }

    @Test("a node whose call failed loses its own slots only: the other node's keys need no new map")
    func failingNodeForgotten() throws {
        let broken = try FakeRedis { _, _, _ in .close }
        let brokenPort = broken.port
        let ownPort = Counter()  // the healthy node's port, known once it listens
        let healthy = try FakeRedis { _, _, command in
            command.first == "CLUSTER" ? .reply(FakeRedis.slotMap([(0, 8191, ownPort.value), (8192, 16383, brokenPort)])) : .reply(FakeRedis.null)
        }
        ownPort.add(healthy.port)
        let store = RedisRemoteStore(cluster: [RedisEndpoint(host: "127.0.0.1", port: healthy.port)], prefix: "f", timeout: .seconds(2))
        func slot(_ index: Int) -> Int { HashSlot.of(Array(store.redisKey(of: Self.object(index)).utf8)) }
        let low = try #require((0..<1000).first { slot($0) < 8192 })
        let high = try #require((0..<1000).first { slot($0) >= 8192 })

        #expect(try store.get(Self.object(low)) == nil)
        #expect(throws: RemoteStoreError.self) { try store.get(Self.object(high)) }
        #expect(try store.get(Self.object(low)) == nil)
        #expect(healthy.commands.filter { $0.first == "CLUSTER" }.count == 1)
    }

    @Test("nodes named once by MOVED keep no idle connection after the map that drops them")
    func redirectedNodesPruned() throws {
        let seedPort = Counter()
        let others = try (0..<12).map { _ in
            try FakeRedis { _, _, command in
                command.first == "CLUSTER" ? .reply(FakeRedis.slotMap([(0, 16383, seedPort.value)])) : .reply(FakeRedis.null)
            }
        }
        let otherPorts = others.map(\.port)
        let moves = Counter()
        let seed = try FakeRedis { _, _, command in
            if command.first == "CLUSTER" { return .reply(FakeRedis.slotMap([(0, 16383, seedPort.value)])) }
            let next = otherPorts[moves.add(1) % otherPorts.count]
            return .reply(Array("-MOVED 0 127.0.0.1:\(next)\r\n".utf8))
        }
        seedPort.add(seed.port)
        let store = RedisRemoteStore(cluster: [RedisEndpoint(host: "127.0.0.1", port: seed.port)], prefix: "m", timeout: .seconds(2))
        for index in 0..<otherPorts.count { #expect(try store.get(Self.object(index)) == nil) }
        #expect(store.pool.idleNodeCount <= 2, "\(store.pool.idleNodeCount)")
    }
}

/// A number threads share: a port set once a server listens, or a count.
final class Counter: Sendable {
    private let total = Atomic<Int>(0)
    var value: Int { total.load(ordering: .sequentiallyConsistent) }
    /// Adds `amount`; the value before.
    @discardableResult
    func add(_ amount: Int) -> Int { total.add(amount, ordering: .sequentiallyConsistent).oldValue }
}
