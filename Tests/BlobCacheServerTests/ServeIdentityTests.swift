import BlobCache
import Crypto
import Foundation
import Testing

/// `blobcache serve` never answers a `/cas/` GET with bytes other than the ones its name is the
/// SHA-256 of, and never takes a path for another key.
@Suite(.serialized)
struct ServeIdentityTests {
    static let curlInstalled = Run.installed("curl")

    /// The public MD5 collision pair (Wang and Yu, 2004), from Tests/Fixtures: one MD5, other bytes.
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")
    static let a = [UInt8]((try? Data(contentsOf: fixtures.appendingPathComponent("md5-collision-a.bin"))) ?? Data())
    static let b = [UInt8]((try? Data(contentsOf: fixtures.appendingPathComponent("md5-collision-b.bin"))) ?? Data())

    private func sha256Hex(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    @Test("PUT /ac/x with one value of the pair, then /cas/<sha256 of the other> with the other: 409, and the /cas/ key is a miss",
          .enabled(if: curlInstalled, "curl is not installed"))
    func collisionThroughServe() throws {
        #expect(Self.a != Self.b && BlobID(hashing: Self.a) == BlobID(hashing: Self.b))
        let scratch = try ScratchDirectory("identity")
        let server = try ServerProcess(directory: scratch.path)
        #expect(try Curl.request("PUT", server.url + "/ac/x", body: Self.a).status == 201)
        let cas = server.url + "/cas/" + sha256Hex(Self.b)
        let refused = try Curl.request("PUT", cas, body: Self.b)
        #expect(refused.status == 409)
        #expect(String(decoding: refused.body, as: UTF8.self).contains(BlobID(hashing: Self.b).hex))
        #expect(try Curl.request("GET", cas).status == 404)
        #expect(try Curl.request("GET", server.url + "/ac/x").body == Self.a)

        // Whatever put a value under a /cas/ key, GET sends it only when its SHA-256 is the name.
        let cache = try BlobCache(directory: scratch.path)
        try cache.set(Self.a, forKey: "cas/" + sha256Hex(Self.b))
        try cache.close()
        #expect(try Curl.request("GET", cas).status == 404)
        #expect(try Curl.request("HEAD", cas).status == 404, "HEAD answers as GET does")
    }

    @Test("a path that is not valid UTF-8, raw or percent-encoded, is 400 and names no key",
          .enabled(if: curlInstalled, "curl is not installed"))
    func pathsThatAreNotUTF8() throws {
        let scratch = try ScratchDirectory("identity-paths")
        let server = try ServerProcess(directory: scratch.path)
        #expect(try Curl.request("PUT", server.url + "/k%EF%BF%BD", body: [1]).status == 201)
        #expect(try Curl.request("PUT", server.url + "/k%FF", body: [2]).status == 400)
        #expect(try Curl.request("GET", server.url + "/k%FE").status == 400)
        // Raw bytes, as no client should send them: bash writes the request line itself.
        let raw = try Run.run("/bin/bash", ["-c", #"""
            exec 3<>/dev/tcp/127.0.0.1/$0
            printf 'GET /k\377 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
            head -c 12 <&3
            """#, "\(server.port)"])
        #expect(raw.output.hasPrefix("HTTP/1.1 400"))
        #expect(try Curl.request("GET", server.url + "/k%EF%BF%BD").body == [1])
    }
}
