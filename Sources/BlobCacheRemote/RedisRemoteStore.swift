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
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A remote tier on a Redis server, through hiredis. Blobs are `<prefix>:blob:<hex>`, key
/// records `<prefix>:key:<md5 of the key>`; a record with an expiry is set with that expiry
/// (`SET … PXAT`), so Redis forgets it on time. Eviction is the server's: give it a
/// `maxmemory` and a `maxmemory-policy` such as `allkeys-lru`. Each call takes an idle
/// connection (or makes one) and gives it back after, so a read never waits behind the
/// write-behind queue's upload; a connection that failed is dropped. A new connection sends
/// `AUTH` when a password is given and `SELECT` for a database other than 0.
///
/// `timeout` bounds each call as a whole, from connecting to the reply's last byte: a server
/// that trickles its answer is cut off on time. A reply announcing more than `maxReplyBytes`
/// is refused from its header, before its bytes are gathered.
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
    /// How long one call may take in all, connecting included.
    public let timeout: Duration
    /// The database `SELECT`ed on each new connection (0, Redis's default, sends none).
    public let database: Int
    /// The longest reply taken, in bytes; a longer one is an error and its connection is dropped.
    public let maxReplyBytes: Int
    /// The `AUTH` arguments: an ACL user (or none) and a password.
    private let credentials: (user: String?, password: String)?
    /// Connections not in use (at most `maxIdle`).
    private let idle = Mutex<[Connection]>([])
    private static let maxIdle = 4

    /// A store on `host:port` under `prefix`; `password` (with `user`, for an ACL user) is sent
    /// as `AUTH` on each new connection.
    ///
    ///     let store = RedisRemoteStore(host: "127.0.0.1", port: 6379, prefix: "blobcache")
    public init(host: String = "127.0.0.1", port: Int = 6379, prefix: String = "blobcache", timeout: Duration = .seconds(2),
                user: String? = nil, password: String? = nil, database: Int = 0,
                maxReplyBytes: Int = HTTPRemoteStore.maxObjectBytes) {
        self.host = host
        self.port = port
        self.prefix = prefix
        self.timeout = timeout
        self.database = database
        self.maxReplyBytes = maxReplyBytes
        credentials = password.map { (user, $0) }
    }

    /// `redis://[user@]host:port[/db]/prefix`, without the password.
    public var description: String {
        let user = credentials?.user.map { "\($0)@" } ?? ""
        let database = self.database == 0 ? "" : "/\(self.database)"
        return "redis://\(user)\(host):\(port)\(database)/\(prefix)"
    }

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
        let deadline = ContinuousClock.now + timeout
        let connection: Connection
        if let reused = idle.withLock({ $0.popLast() }) {
            connection = reused
        } else {
            do {
                connection = try Connection(host: host, port: port, until: deadline, limit: maxReplyBytes)
                if let credentials {
                    _ = try connection.command([Array("AUTH".utf8)] + [credentials.user, credentials.password].compactMap { $0.map { Array($0.utf8) } },
                                               until: deadline)
                }
                if database != 0 { _ = try connection.command([Array("SELECT".utf8), Array(String(database).utf8)], until: deadline) }
            } catch let error as Connection.Broken {
                throw RemoteStoreError.redis(error.message)
            }
        }
        let reply: Reply
        do {
            reply = try connection.command(arguments, until: deadline)
        } catch let error as Connection.Broken {
            throw RemoteStoreError.redis(error.message)
        } catch {
            // The server refused the command (an error reply): the connection is still good.
            giveBack(connection)
            throw error
        }
        giveBack(connection)
        return reply
    }

    /// Keeps `connection` for the next call, unless bytes of another reply wait in it (a
    /// server that sent more than it was asked for): those would be read as the next answer.
    private func giveBack(_ connection: Connection) {
        guard connection.isClean else { return }
        idle.withLock { if $0.count < Self.maxIdle { $0.append(connection) } }
    }

    /// One hiredis context, freed when dropped. Commands are written and replies read by
    /// hand (not `redisCommandArgv`) so that the socket's timeout can shrink to what is left
    /// of the call's deadline before each read, and a reply's length can be checked early.
    private final class Connection: @unchecked Sendable {  // used by one call at a time
        struct Broken: Error { let message: String }
        private let context: UnsafeMutablePointer<redisContext>
        private let endpoint: String
        private let limit: Int

        init(host: String, port: Int, until deadline: ContinuousClock.Instant, limit: Int) throws {
            endpoint = "\(host):\(port)"
            self.limit = limit
            guard let context = redisConnectWithTimeout(host, Int32(clamping: port), try Self.interval(until: deadline, endpoint: endpoint)) else {
                throw Broken(message: "cannot allocate a connection")
            }
            guard context.pointee.err == 0 else {
                let message = String(cString: blobcache_redis_errstr(context))
                redisFree(context)
                throw Broken(message: "\(endpoint): \(message)")
            }
            self.context = context
        }

        deinit { redisFree(context) }

        /// No received byte waits unparsed.
        var isClean: Bool { blobcache_redis_buffered(context) == 0 }

        /// What is left until `deadline`, as the socket timeout; `Broken` once none is.
        private static func interval(until deadline: ContinuousClock.Instant, endpoint: String) throws -> timeval {
            let left = deadline - .now
            guard left > .zero else { throw Broken(message: "\(endpoint): no answer within the remote timeout") }
            let (seconds, attoseconds) = left.components
            let microseconds = max(1000, attoseconds / 1_000_000_000_000)
            return timeval(tv_sec: Int(min(seconds, 86_400)), tv_usec: Int(microseconds))
        }

        private func failure(_ what: String) -> Broken {
            Broken(message: "\(endpoint): \(what): \(String(cString: blobcache_redis_errstr(context)))")
        }

        func command(_ arguments: [[UInt8]], until deadline: ContinuousClock.Instant) throws -> Reply {
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
            guard redisAppendCommandArgv(context, Int32(arguments.count), &pointers, lengths) == REDIS_OK else {
                throw failure("cannot queue the command")
            }
            var written: Int32 = 0
            while written == 0 {
                _ = redisSetTimeout(context, try Self.interval(until: deadline, endpoint: endpoint))
                guard redisBufferWrite(context, &written) == REDIS_OK else { throw failure("sending") }
            }
            var raw: UnsafeMutableRawPointer?
            var headerChecked = false
            let bound = limit > Int.max - (64 << 10) ? Int.max : limit + (64 << 10)
            while raw == nil {
                _ = redisSetTimeout(context, try Self.interval(until: deadline, endpoint: endpoint))
                guard redisBufferRead(context) == REDIS_OK else { throw failure("reading the reply") }
                // Nothing is parsed before the reply's first line has been checked: an aggregate
                // or a bulk string over the limit is refused from its header, before hiredis
                // gathers or allocates anything for it.
                if !headerChecked {
                    switch blobcache_redis_check_header(context, Int64(limit)) {
                    case 0: continue
                    case 1: headerChecked = true
                    default: throw Broken(message: "\(endpoint): a reply that is not a bulk string of at most \(limit) bytes, a status, an error or an integer")
                    }
                }
                guard blobcache_redis_buffered(context) <= bound else {
                    throw Broken(message: "\(endpoint): a reply over the \(limit)-byte limit")
                }
                guard redisGetReplyFromReader(context, &raw) == REDIS_OK else { throw failure("parsing the reply") }
            }
            guard let raw else { throw failure("reading the reply") }
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
