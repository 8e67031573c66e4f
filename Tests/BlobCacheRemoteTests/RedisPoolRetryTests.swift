import BlobCache
import BlobCacheRemote
import Testing

/// An idle connection the server closed (its FIN not yet read when the call takes it) costs
/// the call nothing: the command goes again on a new connection.
struct RedisPoolRetryTests {
    static let object = RemoteObject.blob(BlobID(hashing: Array("retry".utf8)))

    @Test("a reused connection closed before any byte of its answer: the command is sent again on a new one")
    func closedWhileIdle() throws {
        // The first connection answers its first command, then closes on the next without a word.
        let server = try FakeRedis { connection, index, _ in
            connection == 0 && index == 1 ? .close : .reply(FakeRedis.null)
        }
        let store = RedisRemoteStore(port: server.port, prefix: "t", timeout: .seconds(5))
        #expect(try store.get(Self.object) == nil)
        #expect(try store.get(Self.object) == nil)
        #expect(server.connections == 2)
    }

    @Test("a new connection closed before its answer fails the call: it is not sent again")
    func newConnectionNotRetried() throws {
        let server = try FakeRedis { _, _, _ in .close }
        let store = RedisRemoteStore(port: server.port, prefix: "t", timeout: .seconds(5))
        #expect(throws: RemoteStoreError.self) { try store.get(Self.object) }
        #expect(server.connections == 1)
    }
}
