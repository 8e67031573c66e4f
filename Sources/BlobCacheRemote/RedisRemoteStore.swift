import BlobCache
import CHiredis
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A remote tier on a Redis server, through hiredis. Blobs are `<prefix>:blob:<hex>`, key
/// records `<prefix>:key:<md5 of the key>`; a record with an expiry is set with that expiry
/// (`SET … PXAT`), so Redis forgets it on time. Eviction is the server's: give it a
/// `maxmemory` and a `maxmemory-policy` such as `allkeys-lru`. Each call takes an idle
/// connection (or makes one) and gives it back after, so a read never waits behind the
/// write-behind queue's upload; a connection that failed is dropped. `timeout` bounds
/// connecting and each wait for the server.
///
///     var configuration = BlobCache.Configuration()
///     configuration.remote = RedisRemoteStore(host: "cache.internal", prefix: "ci")
public final class RedisRemoteStore: RemoteStore {
    /// The server's host name or address.
    public let host: String
    /// The server's port.
    public let port: Int
    /// What every key starts with, before `:blob:` or `:key:`.
    public let prefix: String
    /// How long connecting, and each command, may take.
    public let timeout: Duration
    /// Connections not in use (at most `maxIdle`).
    private let idle = Mutex<[Connection]>([])
    private static let maxIdle = 4

    /// A store on `host:port` under `prefix`.
    ///
    ///     let store = RedisRemoteStore(host: "127.0.0.1", port: 6379, prefix: "blobcache")
    public init(host: String = "127.0.0.1", port: Int = 6379, prefix: String = "blobcache", timeout: Duration = .seconds(2)) {
        self.host = host
        self.port = port
        self.prefix = prefix
        self.timeout = timeout
    }

    /// `redis://host:port/prefix`.
    public var description: String { "redis://\(host):\(port)/\(prefix)" }

    /// The Redis key of `object`.
    ///
    ///     store.redisKey(of: .blob(id))   // "blobcache:blob:5d41402abc4b2a76b9719d911017c592"
    public func redisKey(of object: RemoteObject) -> String { "\(prefix):\(object.kind.rawValue):\(object.hex)" }

    public func get(_ object: RemoteObject) throws -> [UInt8]? {
        switch try run(["GET", redisKey(of: object)]) {
        case .bytes(let value): return value
        case .nothing: return nil
        default: throw RemoteStoreError.redis("GET answered neither a string nor nil")
        }
    }

    public func exists(_ object: RemoteObject) throws -> Bool {
        guard case .integer(let count) = try run(["EXISTS", redisKey(of: object)]) else {
            throw RemoteStoreError.redis("EXISTS answered no integer")
        }
        return count > 0
    }

    public func put(_ object: RemoteObject, bytes: [UInt8], expiresAt: Date?) throws {
        var arguments: [[UInt8]] = [Array("SET".utf8), Array(redisKey(of: object).utf8), bytes]
        if let expiresAt {
            let milliseconds = max(1, Int64((expiresAt.timeIntervalSince1970 * 1000).rounded(.up)))
            arguments += [Array("PXAT".utf8), Array(String(milliseconds).utf8)]
        }
        _ = try run(arguments)
    }

    public func delete(_ object: RemoteObject) throws {
        _ = try run(["DEL", redisKey(of: object)])
    }

    /// A reply, as far as these commands need.
    private enum Reply {
        case bytes([UInt8])
        case integer(Int64)
        case nothing
        case status
    }

    private func run(_ arguments: [String]) throws -> Reply {
        try run(arguments.map { Array($0.utf8) })
    }

    /// Sends one command on an idle connection, or a new one; gives it back unless it broke.
    private func run(_ arguments: [[UInt8]]) throws -> Reply {
        let connection = try idle.withLock { $0.popLast() } ?? Connection(host: host, port: port, timeout: timeout)
        let reply: Reply
        do {
            reply = try connection.command(arguments)
        } catch let error as Connection.Broken {
            throw RemoteStoreError.redis(error.message)
        } catch {
            // The server refused the command (an error reply): the connection is still good.
            idle.withLock { if $0.count < Self.maxIdle { $0.append(connection) } }
            throw error
        }
        idle.withLock { if $0.count < Self.maxIdle { $0.append(connection) } }
        return reply
    }

    /// One hiredis context, freed when dropped.
    private final class Connection: @unchecked Sendable {  // used by one call at a time
        struct Broken: Error { let message: String }
        private let context: UnsafeMutablePointer<redisContext>

        init(host: String, port: Int, timeout: Duration) throws {
            let (seconds, attoseconds) = timeout.components
            let interval = timeval(tv_sec: Int(max(0, min(seconds, 86_400))), tv_usec: Int(max(1000, attoseconds / 1_000_000_000_000)))
            guard let context = redisConnectWithTimeout(host, Int32(clamping: port), interval) else {
                throw RemoteStoreError.redis("cannot allocate a connection")
            }
            guard context.pointee.err == 0 else {
                let message = String(cString: blobcache_redis_errstr(context))
                redisFree(context)
                throw RemoteStoreError.redis("\(host):\(port): \(message)")
            }
            _ = redisSetTimeout(context, interval)
            self.context = context
        }

        deinit { redisFree(context) }

        func command(_ arguments: [[UInt8]]) throws -> Reply {
            let lengths = arguments.map(\.count)
            let copies = arguments.map { argument -> UnsafeMutablePointer<CChar> in
                let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, argument.count))
                argument.withUnsafeBytes { bytes in
                    if let base = bytes.baseAddress { UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: bytes.count) }
                }
                return copy
            }
            defer { copies.forEach { $0.deallocate() } }
            var pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) }
            guard let raw = redisCommandArgv(context, Int32(arguments.count), &pointers, lengths) else {
                throw Broken(message: String(cString: blobcache_redis_errstr(context)))
            }
            let reply = raw.assumingMemoryBound(to: redisReply.self)
            defer { freeReplyObject(raw) }
            let type = reply.pointee.type
            switch type {
            case Int32(blobcache_redis_reply_string()):
                guard let text = reply.pointee.str else { return .bytes([]) }
                return .bytes(Array(UnsafeRawBufferPointer(start: text, count: Int(reply.pointee.len))))
            case Int32(blobcache_redis_reply_integer()):
                return .integer(reply.pointee.integer)
            case Int32(blobcache_redis_reply_nil()):
                return .nothing
            case Int32(blobcache_redis_reply_status()):
                return .status
            case Int32(blobcache_redis_reply_error()):
                let message = reply.pointee.str.map { String(cString: $0) } ?? "error"
                // The server refused the command: the connection itself is still good.
                throw RemoteStoreError.redis(message)
            default:
                throw RemoteStoreError.redis("unexpected reply type \(type)")
            }
        }
    }
}
