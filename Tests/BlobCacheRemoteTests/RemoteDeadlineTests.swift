import BlobCache
import BlobCacheRemote
import Foundation
import Testing

/// A remote call ends within its timeout however the server answers, a reply cannot make a
/// read allocate more than the store's limit, and a password in a Redis URL is sent.
@Suite(.serialized)
struct RemoteDeadlineTests {
    static let haveRedis = LoopbackServer.redisPath != nil
    static let id = BlobID(hashing: Array("deadline".utf8))

    @Test("a Redis server that trickles its reply is cut off: the call throws instead of waiting for it")
    func tricklingRedis() throws {
        let server = try SlowServer("redis-trickle")
        let store = RedisRemoteStore(port: server.port, prefix: "t", timeout: .seconds(1))
        #expect(throws: RemoteStoreError.self) { try store.get(.blob(Self.id)) }
    }

    @Test("an HTTP server that trickles its body is cut off: the call throws instead of waiting for it")
    func tricklingHTTP() throws {
        let server = try SlowServer("http-trickle")
        let store = HTTPRemoteStore(baseURL: "http://127.0.0.1:\(server.port)/t", timeout: .seconds(1))
        #expect(throws: (any Error).self) { try store.get(.blob(Self.id)) }
    }

    @Test("a Redis reply announcing more than the limit, or an array, is refused from its header",
          arguments: ["redis-huge", "redis-split", "redis-array"])
    func oversizedRedisReply(mode: String) throws {
        let server = try SlowServer(mode, size: 64 << 20)
        let store = RedisRemoteStore(port: server.port, prefix: "t", timeout: .seconds(30), maxReplyBytes: 1 << 20)
        #expect {
            try store.get(.blob(Self.id))
        } throws: { error in
            "\(error)".contains("not a bulk string of at most 1048576 bytes")
        }
    }

    @Test("a password in a remote URL never appears in an error message")
    func passwordRedacted() throws {
        for url in ["rediss://:hunter2@127.0.0.1/x?tls=maybe", "http://ci:hunter2@127.0.0.1/x?layout=tree", "redis://ci:hunter2@127.0.0.1/x y"] {
            #expect {
                try RemoteStores.store(url: url)
            } throws: { error in
                !"\(error)".contains("hunter2") && "\(error)".contains("***")
            }
        }
    }

    @Test("a password in a redis:// URL is sent as AUTH (plain and ACL user); a wrong one fails the call",
          .enabled(if: haveRedis, "redis-server is not installed"))
    func redisAuthFromURL() throws {
        let redis = try LoopbackServer.redis(["--requirepass", "pa%ss", "--user", "alice", "on", ">wonder", "~*", "&*", "+@all"])
        let object = RemoteObject.blob(Self.id)
        let bytes = Array("guarded".utf8)

        let withPassword = try RemoteStores.store(url: "redis://:pa%25ss@127.0.0.1:\(redis.port)/2/auth")
        try withPassword.put(object, bytes: bytes, expiresAt: nil)
        #expect(try withPassword.get(object) == bytes)
        #expect("\(withPassword)" == "redis://127.0.0.1:\(redis.port)/2/auth")

        // Database 2 was selected: the same prefix in database 0 does not hold it.
        let otherDatabase = try RemoteStores.store(url: "redis://:pa%25ss@127.0.0.1:\(redis.port)/auth")
        #expect(try otherDatabase.get(object) == nil)

        let aclUser = try RemoteStores.store(url: "redis://alice:wonder@127.0.0.1:\(redis.port)/2/auth")
        #expect(try aclUser.get(object) == bytes)
        #expect(!"\(aclUser)".contains("wonder"))

        let wrong = try RemoteStores.store(url: "redis://:nope@127.0.0.1:\(redis.port)/2/auth")
        #expect(throws: RemoteStoreError.self) { try wrong.get(object) }
        let none = try RemoteStores.store(url: "redis://127.0.0.1:\(redis.port)/2/auth")
        #expect(throws: RemoteStoreError.self) { try none.get(object) }
    }
}

/// `Tests/Fakes/slow_server.py` in one of its modes, on a free loopback port; killed when dropped.
final class SlowServer {
    let process = Process()
    let port: Int

    init(_ mode: String, size: Int = 0) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fakes/slow_server.py").path
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, mode, String(size)]
        process.standardOutput = output
        try process.run()
        var line: [UInt8] = []
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { break }
            if first == UInt8(ascii: "\n") { break }
            line.append(first)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw SlowServerError.noPort
        }
        self.port = port
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    enum SlowServerError: Error { case noPort }
}
