import BlobCache
import BlobCacheRemote
import Foundation
import NIOPosix
import Testing

/// The Redis URL forms beyond `redis://`, and the promises every Redis store keeps.
struct RedisLocationTests {
    @Test("redis://, rediss:// and redis+cluster:// URLs parse into the stores they name")
    func parsing() throws {
        let ca = FileManager.default.temporaryDirectory.appendingPathComponent("blobcache-ca-\(UUID().uuidString).pem").path
        try Data("not read until a connection".utf8).write(to: URL(fileURLWithPath: ca))
        defer { try? FileManager.default.removeItem(atPath: ca) }

        let tls = try #require(try RedisLocation.store(url: "rediss://u:p@cache.internal:6380/4/ci?ca=\(ca)&verify=ca"))
        #expect(tls.host == "cache.internal" && tls.port == 6380 && tls.database == 4 && tls.prefix == "ci" && !tls.isCluster)
        #expect(tls.tls == RedisTLS(caFile: ca, verifiesHostname: false))
        #expect("\(tls)" == "rediss://u@cache.internal:6380/4/ci?ca=\(ca)&verify=ca")

        let plain = try #require(try RedisLocation.store(url: "rediss://cache.internal"))
        #expect(plain.port == 6379 && plain.prefix == "blobcache" && plain.tls == RedisTLS())

        let cluster = try #require(try RedisLocation.store(url: "redis+cluster://:pw@10.0.0.1:7000,10.0.0.2,[::1]:7002/ci"))
        #expect(cluster.isCluster && cluster.tls == nil && cluster.prefix == "ci")
        #expect(cluster.seeds == [RedisEndpoint(host: "10.0.0.1", port: 7000), RedisEndpoint(host: "10.0.0.2", port: 6379),
                                  RedisEndpoint(host: "::1", port: 7002)])
        #expect("\(cluster)" == "redis+cluster://10.0.0.1:7000,10.0.0.2:6379,[::1]:7002/ci")
        let secure = try #require(try RedisLocation.store(url: "rediss+cluster://h1:1,h2:2/x"))
        #expect(secure.isCluster && secure.tls == RedisTLS())

        let single = try #require(try RedisLocation.store(url: "redis://alice:p%2Fw@127.0.0.1:7000/3/team/ci"))
        #expect(single.host == "127.0.0.1" && single.port == 7000 && single.database == 3 && single.prefix == "team/ci")
        #expect(!single.isCluster && single.tls == nil)
        #expect("\(single)" == "redis://alice@127.0.0.1:7000/3/team/ci")
        #expect(try RedisLocation.store(url: "http://127.0.0.1/x") == nil)
        // Through the CLI's entry point too.
        #expect("\(try RemoteStores.store(url: "redis+cluster://a:1,b:2/p"))" == "redis+cluster://a:1,b:2/p")
    }

    @Test("malformed Redis URLs are refused with a reason and without the password",
          arguments: ["rediss://:hunter2@h/x?tls=maybe", "rediss://:hunter2@h/x?ca=/nonexistent/ca.pem",
                      "redis+cluster://:hunter2@h1:1,h2:x/p", "redis+cluster://:hunter2@h1:1,,h2:2/p",
                      "redis+cluster://:hunter2@h1:1/0/p", "rediss://:hunter2@h1:1,h2:2/p", "redis+cluster://:hunter2@h1/p?ca=/x",
                      "rediss://alice@h/p", "rediss://:hunter2@h/a b", "redis://:hunter2@h/x?ca=/etc/ca.pem",
                      "redis://:hunter2@h/-1/p", "redis://:hunter2@h:70000/p"])
    func refused(url: String) {
        #expect {
            try RemoteStores.store(url: url)
        } throws: { error in
            guard let error = error as? RemoteStoreError, case .invalidURL = error else { return false }
            return !"\(error)".contains("hunter2")
        }
    }

    @Test("a Redis call on a SwiftNIO event loop is refused, not blocking the loop")
    func onEventLoop() throws {
        for store in [RedisRemoteStore(port: 1, prefix: "x"), RedisRemoteStore(cluster: [RedisEndpoint(host: "127.0.0.1", port: 1)], prefix: "x")] {
            let result = try MultiThreadedEventLoopGroup.singleton.next().submit { () -> RemoteStoreError? in
                do {
                    _ = try store.get(.blob(BlobID(hashing: [1])))
                    return nil
                } catch {
                    return error as? RemoteStoreError
                }
            }.wait()
            #expect(result == .calledOnEventLoop)
        }
    }
}
