@testable import BlobCache
import BlobCacheRemote
import Crypto
import Foundation
import Testing

/// Through a remote, a key reads the value it was set to or nothing: never another value with
/// the same MD5, and, with an authentication key, never a record somebody else wrote.
@Suite(.serialized)
struct RemoteIdentityTests {
    static let haveNginx = LoopbackServer.nginxPath != nil
    static let haveRedis = LoopbackServer.redisPath != nil && LoopbackServer.redisCLIPath != nil

    /// The public MD5 collision pair (Wang and Yu, 2004), from Tests/Fixtures: one MD5, other bytes.
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")
    static let a = [UInt8]((try? Data(contentsOf: fixtures.appendingPathComponent("md5-collision-a.bin"))) ?? Data())
    static let b = [UInt8]((try? Data(contentsOf: fixtures.appendingPathComponent("md5-collision-b.bin"))) ?? Data())

    static func configuration(_ store: any RemoteStore, key: SymmetricKey? = nil) -> BlobCache.Configuration {
        var configuration = BlobCache.Configuration()
        configuration.remote = store
        configuration.remoteAuthenticationKey = key
        return configuration
    }

    /// Two caches set the two values of the pair under two keys: the server keeps one blob
    /// under their one id. A third cache reads each key as its own value or as a miss.
    private func collision(through store: any RemoteStore) throws {
        #expect(BlobID(hashing: Self.a) == BlobID(hashing: Self.b))
        let scratch = Scratch()
        for (directory, key, value) in [("a", "key-a", Self.a), ("b", "key-b", Self.b)] {
            let cache = try BlobCache(directory: scratch.sub(directory), configuration: Self.configuration(store))
            try cache.set(value, forKey: key)
            cache.flushRemote()
            try cache.close()
        }
        let reader = try BlobCache(directory: scratch.sub("c"), configuration: Self.configuration(store))
        #expect(try reader.bytes(forKey: "key-a") == nil, "the server's blob is the other value of the pair")
        #expect(try reader.bytes(forKey: "key-b") == Self.b)
        #expect(reader.statistics().remote.rejected == 1)
        try reader.close()
        // The first cache holds key-a's value: key-b from the remote is key-b's, not its own blob.
        let first = try BlobCache(directory: scratch.sub("a"), configuration: Self.configuration(store))
        #expect(try first.bytes(forKey: "key-b") == Self.b)
        #expect(try first.bytes(forKey: "key-a") == Self.a)
        try first.close()
    }

    @Test("the MD5 collision pair through nginx: each key reads its own value or misses", .enabled(if: haveNginx, "nginx is not installed"))
    func collisionThroughNginx() throws {
        let nginx = try LoopbackServer.nginx()
        try collision(through: HTTPRemoteStore(baseURL: nginx.httpURL + "/identity", layout: .subdirs))
    }

    @Test("the MD5 collision pair through Redis: each key reads its own value or misses", .enabled(if: haveRedis, "redis-server is not installed"))
    func collisionThroughRedis() throws {
        let redis = try LoopbackServer.redis()
        try collision(through: RedisRemoteStore(port: redis.port, prefix: "identity"))
    }

    /// A version 1 record, as releases before the SHA-256 wrote it.
    static func versionOneRecord(key: String, id: BlobID, expiry: Int64) -> [UInt8] {
        var writer = BinaryWriter()
        writer.append(RemoteKeyRecord.magic)
        writer.append(UInt8(1))
        writer.append(bytes: [0, 0, 0])
        writer.append(digestOf: id)
        writer.append(expiry)
        writer.append(lengthPrefixed: key)
        writer.append(CRC32.checksum(writer.bytes))
        return writer.bytes
    }

    @Test("with an authentication key, records forged without it (untagged, version 1, or tagged under another key) are rejected",
          .enabled(if: haveRedis, "redis-server is not installed"))
    func forgedRecords() throws {
        let redis = try LoopbackServer.redis()
        let store = RedisRemoteStore(port: redis.port, prefix: "auth")
        let key = SymmetricKey(size: .bits256)
        let scratch = Scratch()
        let real = Array("the real value".utf8), planted = Array("the attacker's value".utf8)
        let writer = try BlobCache(directory: scratch.sub("w"), configuration: Self.configuration(store, key: key))
        try writer.set(real, forKey: "k")
        try writer.set(planted, forKey: "planted")
        writer.flushRemote()
        try writer.close()

        // Honest records read back under the key.
        let honest = try BlobCache(directory: scratch.sub("h"), configuration: Self.configuration(store, key: key))
        #expect(try honest.bytes(forKey: "k") == real)
        #expect(honest.statistics().remote.rejected == 0)
        try honest.close()

        let plantedID = BlobID(hashing: planted)
        let forgeries: [(String, [UInt8])] = [
            ("untagged", RemoteKeyRecord(key: "k", id: plantedID, expiry: Nanoseconds.never, sha256: Array(SHA256.hash(data: planted)))
                .encoded(authenticatingWith: nil)),
            ("another key", RemoteKeyRecord(key: "k", id: plantedID, expiry: Nanoseconds.never, sha256: Array(SHA256.hash(data: planted)))
                .encoded(authenticatingWith: SymmetricKey(size: .bits256))),
            ("version 1", Self.versionOneRecord(key: "k", id: plantedID, expiry: Nanoseconds.never)),
        ]
        for (index, (name, forged)) in forgeries.enumerated() {
            try store.put(.key("k"), bytes: forged, expiresAt: nil)
            let reader = try BlobCache(directory: scratch.sub("r\(index)"), configuration: Self.configuration(store, key: key))
            #expect(try reader.bytes(forKey: "k") == nil, "\(name)")
            #expect(reader.statistics().remote.rejected == 1, "\(name)")
            #expect(try reader.entries().isEmpty, "\(name): nothing written back")
            try reader.close()
            #expect(try BlobCache(directory: scratch.sub("r\(index)")).statistics().lifetime.remoteRejections == 1)
            // Without a key the remote is trusted for records (docs/SECURITY.md): the forgery reads.
            let trusting = try BlobCache(directory: scratch.sub("t\(index)"), configuration: Self.configuration(store))
            #expect(try trusting.bytes(forKey: "k") == planted, "\(name)")
            try trusting.close()
        }
        // With a key, content-addressed reads do not ask the remote: no record vouches for them.
        let byID = try BlobCache(directory: scratch.sub("id"), configuration: Self.configuration(store, key: key))
        #expect(try byID.bytes(for: plantedID) == nil)
        try byID.close()
    }

    @Test("the CLI: --remote-key-file refused when others may read it (exit 9); a forged record is a miss that stat counts",
          .enabled(if: haveRedis, "redis-server is not installed"))
    func remoteKeyFileFromTheCLI() throws {
        let redis = try LoopbackServer.redis()
        let scratch = Scratch()
        let keyFile = scratch.sub("remote.key")
        _ = FileManager.default.createFile(atPath: keyFile, contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }))
        let remote = ["--remote", "redis://127.0.0.1:\(redis.port)/cli", "--remote-key-file", keyFile]
        chmod(keyFile, 0o640)
        let open = try runProgram(blobcacheTool, ["--dir", scratch.sub("a")] + remote + ["get", "k"])
        #expect(open.status == 9 && open.error.contains("chmod 600"))
        chmod(keyFile, 0o600)
        let put = try runProgram(blobcacheTool, ["--dir", scratch.sub("a")] + remote + ["put", "k", keyFile])
        #expect(put.status == 0)
        // Forged by hand, without the key.
        let store = RedisRemoteStore(port: redis.port, prefix: "cli")
        let forged = RemoteKeyRecord(key: "k", id: BlobID(hashing: [1]), expiry: Nanoseconds.never, sha256: Array(SHA256.hash(data: [1])))
        try store.put(.key("k"), bytes: forged.encoded(authenticatingWith: nil), expiresAt: nil)
        let get = try runProgram(blobcacheTool, ["--dir", scratch.sub("b")] + remote + ["get", "k"])
        #expect(get.status == 1 && get.output.isEmpty)
        let stat = try runProgram(blobcacheTool, ["--dir", scratch.sub("b"), "stat", "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(stat.output.utf8)) as? [String: Any])
        #expect((json["lifetime"] as? [String: Any])?["remoteRejections"] as? Int == 1)
    }
}
