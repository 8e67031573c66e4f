import BlobCache
import BlobCacheRemote
import Testing

/// A port outside 1...65535 fails every call with a clear error, rather than reaching whatever
/// the C library makes of it (70000 is taken as 4464).
struct RedisPortTests {
    static let object = RemoteObject.blob(BlobID(hashing: Array("port".utf8)))

    @Test("a port past 65535, or 0, fails the call and is never connected to")
    func outOfRange() throws {
        let server = try FakeRedis { _, _, _ in .reply(FakeRedis.null) }
        let stores = [RedisRemoteStore(port: server.port + 65536, prefix: "t", timeout: .seconds(2)),
                      RedisRemoteStore(port: 0, prefix: "t", timeout: .seconds(2)),
                      RedisRemoteStore(cluster: [RedisEndpoint(host: "127.0.0.1", port: server.port + 65536)], prefix: "t", timeout: .seconds(2))]
        for store in stores {
            #expect {
                try store.get(Self.object)
            } throws: { error in
                "\(error)".contains("the port must be 1 to 65535")
            }
        }
        #expect(server.connections == 0)
    }
}
