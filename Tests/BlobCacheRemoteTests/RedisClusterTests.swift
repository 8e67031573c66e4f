import BlobCache
import BlobCacheRemote
import Foundation
import Testing

/// `redis+cluster://` against a real three-master cluster: keys routed by slot, and a live
/// reshard followed (MOVED, ASK) without a wrong or lost value.
@Suite(.serialized)
struct RedisClusterTests {
    static let haveRedis = RemoteTierTests.haveRedis

    static func object(_ index: Int) -> RemoteObject { .blob(BlobID(hashing: Array("cluster-\(index)".utf8))) }
    static func value(_ index: Int, _ generation: Int) -> [UInt8] { Array("value-\(index)-\(generation)".utf8) }

    @Test("1,000 keys spread over three masters, and read back right while 3,000 slots move between two of them",
          .enabled(if: haveRedis, "redis-server is not installed"))
    func reshardUnderLoad() throws {
        let cluster = try LoopbackCluster()
        let store = try RemoteStores.store(url: "redis+cluster://\(cluster.seeds)/rc", timeout: .seconds(5))
        #expect("\(store)" == "redis+cluster://\(cluster.seeds)/rc")
        let count = 1000
        var expected = (0..<count).map { Self.value($0, 0) }
        for index in 0..<count { try store.put(Self.object(index), bytes: expected[index], expiresAt: nil) }
        let before = try cluster.nodes.map { try cluster.keyCount(on: $0) }
        #expect(before.allSatisfy { $0 > 0 }, "\(before)")
        #expect(before.reduce(0, +) == count)

        let (from, to) = (cluster.nodes[0], cluster.nodes[1])
        let reshard = Process()
        reshard.executableURL = URL(fileURLWithPath: LoopbackServer.redisCLIPath!)
        reshard.arguments = ["--cluster", "reshard", "127.0.0.1:\(from.port)", "--cluster-from", try cluster.id(of: from),
                             "--cluster-to", try cluster.id(of: to), "--cluster-slots", "3000", "--cluster-yes", "--cluster-pipeline", "1"]
        reshard.standardOutput = FileHandle.nullDevice
        reshard.standardError = FileHandle.nullDevice
        try reshard.run()

        var random = SystemRandomNumberGenerator()
        var (operations, wrong, failures, generation) = (0, 0, [String](), 1)
        while reshard.isRunning {
            let index = Int.random(in: 0..<count, using: &random)
            do {
                if Int.random(in: 0..<10, using: &random) < 3 {
                    let value = Self.value(index, generation)
                    generation += 1
                    try store.put(Self.object(index), bytes: value, expiresAt: nil)
                    expected[index] = value
                } else if try store.get(Self.object(index)) != expected[index] {
                    wrong += 1
                }
            } catch {
                failures.append("\(error)")
            }
            operations += 1
        }
        #expect(reshard.terminationStatus == 0)
        #expect(operations > 100)
        #expect(wrong == 0)
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        let lost = try (0..<count).filter { try store.get(Self.object($0)) != expected[$0] }.count
        #expect(lost == 0)

        // The slots moved, and their keys with them: the reads above followed them.
        let after = try cluster.nodes.map { try cluster.keyCount(on: $0) }
        #expect(after[1] > before[1] && after[0] < before[0], "\(before) -> \(after)")
        #expect(after.reduce(0, +) == count)
    }

    @Test("a slot being migrated: ASK is followed with ASKING to the importing node, for writes, reads and deletes",
          .enabled(if: haveRedis, "redis-server is not installed"))
    func askDuringMigration() throws {
        let cluster = try LoopbackCluster()
        let store = try RemoteStores.store(url: "redis+cluster://\(cluster.seeds)/ask") as! RedisRemoteStore
        // `--cluster create` gives three masters slots 0-5460, 5461-10922 and 10923-16383.
        let (index, slot) = try #require((0..<1000).lazy.map { ($0, HashSlot.of(Array(store.redisKey(of: Self.object($0)).utf8))) }
            .first { $0.1 < 5000 })
        let (source, target) = (cluster.nodes[0], cluster.nodes[1])
        _ = try cluster.cli(["cluster", "setslot", "\(slot)", "importing", try cluster.id(of: source)], on: target)
        _ = try cluster.cli(["cluster", "setslot", "\(slot)", "migrating", try cluster.id(of: target)], on: source)

        // The key is on neither node: the source answers ASK, and the importing node takes it.
        try store.put(Self.object(index), bytes: Self.value(index, 7), expiresAt: nil)
        func keys(on node: LoopbackServer) throws -> String {
            try cluster.cli(["cluster", "countkeysinslot", "\(slot)"], on: node).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try keys(on: target) == "1")
        #expect(try keys(on: source) == "0")
        #expect(try store.get(Self.object(index)) == Self.value(index, 7))
        #expect(try store.exists(Self.object(index)))
        try store.delete(Self.object(index))
        #expect(try keys(on: target) == "0")
        #expect(try store.get(Self.object(index)) == nil)
    }

    @Test("two caches on two directories share values through a cluster", .enabled(if: haveRedis, "redis-server is not installed"))
    func shareThroughCluster() throws {
        let cluster = try LoopbackCluster()
        let store = try RemoteStores.store(url: "redis+cluster://\(cluster.seeds)/share")
        try RemoteTierTests().share(through: store)
        let counts = try cluster.nodes.map { try cluster.keyCount(on: $0) }
        #expect(counts.filter { $0 > 0 }.count >= 2, "\(counts)")
    }

    @Test("a seed that is down is skipped; a password applies to every node",
          .enabled(if: haveRedis, "redis-server is not installed"))
    func seedsAndPassword() throws {
        let cluster = try LoopbackCluster()
        for node in cluster.nodes {
            _ = try cluster.cli(["config", "set", "requirepass", "cl%ster"], on: node)
        }
        let store = try RemoteStores.store(url: "redis+cluster://:cl%25ster@127.0.0.1:1,\(cluster.seeds)/pw")
        for index in 0..<50 { try store.put(Self.object(index), bytes: Self.value(index, 0), expiresAt: nil) }
        for index in 0..<50 { #expect(try store.get(Self.object(index)) == Self.value(index, 0)) }
        #expect(!"\(store)".contains("cl%"))
        let wrong = try RemoteStores.store(url: "redis+cluster://:nope@\(cluster.seeds)/pw")
        #expect { try wrong.get(Self.object(0)) } throws: { "\($0)".contains("WRONGPASS") && !"\($0)".contains("nope") }
    }

    @Test("rediss+cluster://: a TLS-only cluster, its nodes' certificates checked against the CA and their addresses",
          .enabled(if: haveRedis && LoopbackServer.opensslPath != nil, "redis-server or openssl is not installed"))
    func tlsCluster() throws {
        let cluster = try LoopbackCluster(tls: true)
        let store = try RemoteStores.store(url: "rediss+cluster://\(cluster.seeds)/secure?ca=\(cluster.caFile!)")
        for index in 0..<200 { try store.put(Self.object(index), bytes: Self.value(index, 0), expiresAt: nil) }
        for index in 0..<200 { #expect(try store.get(Self.object(index)) == Self.value(index, 0)) }
        let counts = try cluster.nodes.map { try cluster.keyCount(on: $0) }
        #expect(counts.allSatisfy { $0 > 0 } && counts.reduce(0, +) == 200, "\(counts)")
        let plain = try RemoteStores.store(url: "redis+cluster://\(cluster.seeds)/secure", timeout: .seconds(1))
        #expect(throws: RemoteStoreError.self) { try plain.get(Self.object(0)) }
    }

    @Test("CLUSTERDOWN is retried until the call's deadline, then fails; once the slot is served again, calls succeed",
          .enabled(if: haveRedis, "redis-server is not installed"))
    func clusterDown() throws {
        let cluster = try LoopbackCluster()
        let store = try RemoteStores.store(url: "redis+cluster://\(cluster.seeds)/down", timeout: .milliseconds(800)) as! RedisRemoteStore
        try store.put(Self.object(0), bytes: Self.value(0, 0), expiresAt: nil)
        let slot = HashSlot.of(Array(store.redisKey(of: Self.object(0)).utf8))
        let owner = try #require(try cluster.nodes.first { try cluster.cli(["cluster", "countkeysinslot", "\(slot)"], on: $0).hasPrefix("1") })
        _ = try cluster.cli(["cluster", "delslots", "\(slot)"], on: owner)

        // Waited out, not given up at the first answer: the error says the state lasted until the deadline.
        #expect {
            try store.get(Self.object(0))
        } throws: { error in
            "\(error)".contains("CLUSTERDOWN") && "\(error)".contains("until the remote timeout")
        }

        _ = try cluster.cli(["cluster", "addslots", "\(slot)"], on: owner)
        try cluster.waitUntilOK()
        #expect(try store.get(Self.object(0)) == Self.value(0, 0))
    }

    @Test("no seed answering fails the call, saying which could not be reached")
    func noSeed() throws {
        let store = try RemoteStores.store(url: "redis+cluster://127.0.0.1:1,127.0.0.1:2/x", timeout: .seconds(1))
        #expect {
            try store.get(Self.object(0))
        } throws: { error in
            "\(error)".contains("cannot connect")
        }
    }
}
