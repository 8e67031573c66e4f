import BlobCache
import BlobCacheRemote
import Foundation
import Synchronization
import Testing

/// `rediss://` against redis-server's own TLS, with a CA and certificate made by openssl.
@Suite(.serialized)
struct RedisTLSTests {
    static let haveTLS = RemoteTierTests.haveRedis && LoopbackServer.opensslPath != nil
    static let object = RemoteObject.blob(BlobID(hashing: Array("tls".utf8)))
    static let bytes = RemoteTierTests.random(200_000, seed: 9)

    @Test("rediss:// with the test CA round-trips; the certificate must name the host unless verify=ca",
          .enabled(if: haveTLS, "redis-server or openssl is not installed"))
    func roundTrip() throws {
        let redis = try LoopbackServer.redisTLS()
        let store = try RemoteStores.store(url: "rediss://localhost:\(redis.port)/tls?ca=\(redis.caFile)")
        #expect("\(store)" == "rediss://localhost:\(redis.port)/tls?ca=\(redis.caFile)")
        try store.put(Self.object, bytes: Self.bytes, expiresAt: nil)
        #expect(try store.get(Self.object) == Self.bytes)
        #expect(try store.exists(Self.object))
        try store.delete(Self.object)
        #expect(try store.get(Self.object) == nil)

        // The certificate names localhost, not 127.0.0.1: refused, unless only the chain is checked.
        let byAddress = try RemoteStores.store(url: "rediss://127.0.0.1:\(redis.port)/tls?ca=\(redis.caFile)")
        #expect {
            try byAddress.get(Self.object)
        } throws: { error in
            "\(error)".contains("127.0.0.1:\(redis.port)") && "\(error)".lowercased().contains("hostname")
        }
        let chainOnly = try RemoteStores.store(url: "rediss://127.0.0.1:\(redis.port)/tls?ca=\(redis.caFile)&verify=ca")
        #expect(try chainOnly.get(Self.object) == nil)

        // Plain RESP to a TLS port gets no answer it can read: an error, on time.
        let plain = RedisRemoteStore(host: "127.0.0.1", port: redis.port, prefix: "tls", timeout: .seconds(1))
        #expect(throws: RemoteStoreError.self) { try plain.get(Self.object) }
    }

    @Test("a refused handshake is reported as such however the close and the first command interleave",
          .enabled(if: haveTLS, "redis-server or openssl is not installed"))
    func refusedHandshakeNamed() throws {
        let redis = try LoopbackServer.redisTLS()
        // A new store each time: a new connection, whose handshake fails while the first
        // command is being written (before, as or after the channel closes). Busy threads make
        // the calling thread lose the processor between connecting and writing, as a loaded
        // machine does, so that every order shows up.
        let busy = Atomic<Bool>(true)
        let spinners = (0..<4).map { _ in Thread { while busy.load(ordering: .relaxed) {} } }
        spinners.forEach { $0.start() }
        defer { busy.store(false, ordering: .relaxed) }
        var unnamed: [String] = []
        for _ in 0..<300 {
            let byAddress = try RemoteStores.store(url: "rediss://127.0.0.1:\(redis.port)/tls?ca=\(redis.caFile)")
            do {
                _ = try byAddress.get(Self.object)
                unnamed.append("no error")
            } catch {
                if !"\(error)".lowercased().contains("hostname") { unnamed.append("\(error)") }
            }
        }
        #expect(unnamed.isEmpty, "\(unnamed.count) of 300: \(unnamed.prefix(2))")
    }

    @Test("without the CA, or with another CA, the call fails with a TLS error naming the node",
          .enabled(if: haveTLS, "redis-server or openssl is not installed"))
    func untrusted() throws {
        let redis = try LoopbackServer.redisTLS()
        for url in ["rediss://localhost:\(redis.port)/tls", "rediss://localhost:\(redis.port)/tls?ca=\(redis.otherCAFile)"] {
            let store = try RemoteStores.store(url: url)
            #expect {
                try store.get(Self.object)
            } throws: { error in
                guard let error = error as? RemoteStoreError, case .redis(let message) = error else { return false }
                return message.contains("localhost:\(redis.port)") && message.contains("TLS") && message.contains("CERTIFICATE_VERIFY_FAILED")
            }
        }
        #expect {
            try RemoteStores.store(url: "rediss://localhost:\(redis.port)/tls?ca=\(redis.folder)/missing.pem")
        } throws: { error in
            "\(error)".contains("cannot read the CA file")
        }
    }

    @Test("requirepass and an ACL user over TLS; a wrong password fails and is never shown",
          .enabled(if: haveTLS, "redis-server or openssl is not installed"))
    func passwordOverTLS() throws {
        let redis = try LoopbackServer.redisTLS(["--requirepass", "s3cret", "--user", "alice", "on", ">wonder", "~*", "&*", "+@all"])
        let withPassword = try RemoteStores.store(url: "rediss://:s3cret@localhost:\(redis.port)/3/tls?ca=\(redis.caFile)")
        try withPassword.put(Self.object, bytes: Self.bytes, expiresAt: nil)
        #expect(!"\(withPassword)".contains("s3cret"))
        let alice = try RemoteStores.store(url: "rediss://alice:wonder@localhost:\(redis.port)/3/tls?ca=\(redis.caFile)")
        #expect(try alice.get(Self.object) == Self.bytes)
        #expect("\(alice)" == "rediss://alice@localhost:\(redis.port)/3/tls?ca=\(redis.caFile)")
        // Database 3 was selected: database 0 does not hold it.
        let otherDatabase = try RemoteStores.store(url: "rediss://:s3cret@localhost:\(redis.port)/tls?ca=\(redis.caFile)")
        #expect(try otherDatabase.get(Self.object) == nil)

        let wrong = try RemoteStores.store(url: "rediss://alice:nothim@localhost:\(redis.port)/tls?ca=\(redis.caFile)")
        #expect {
            try wrong.get(Self.object)
        } throws: { error in
            "\(error)".contains("WRONGPASS") && !"\(error)".contains("nothim")
        }
        let none = try RemoteStores.store(url: "rediss://localhost:\(redis.port)/tls?ca=\(redis.caFile)")
        #expect { try none.get(Self.object) } throws: { "\($0)".contains("NOAUTH") }
    }
}
