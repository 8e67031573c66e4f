import BlobCache
import NIOPosix
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A remote tier on Redis: one server, over TCP or TLS, or a Redis Cluster. Blobs are
/// `<prefix>:blob:<hex>`, key records `<prefix>:key:<md5 of the key>`; a record with an expiry
/// is set with that expiry (`SET … PXAT`), so Redis forgets it on time. Eviction is the
/// server's: give it a `maxmemory` and a `maxmemory-policy` such as `allkeys-lru`. Each call
/// takes an idle connection to its node (or makes one) and gives it back after, so a read never
/// waits behind the write-behind queue's upload; a connection that failed is dropped. A new
/// connection sends `AUTH` when a password is given and `SELECT` for a database other than 0.
/// In a cluster, keys go to the node their hash slot names, and `MOVED`, `ASK`, `TRYAGAIN` and
/// `CLUSTERDOWN` are followed (see `RedisCluster`), within the call's deadline.
///
/// `timeout` bounds each call as a whole, from connecting to the reply's last byte, every
/// redirection included: a server that trickles its answer is cut off on time. A reply
/// announcing more than `maxReplyBytes` is refused from its header, before its bytes are
/// gathered. Calls block their thread, so they are refused (an error) on a SwiftNIO event loop.
///
///     var configuration = BlobCache.Configuration()
///     configuration.remote = RedisRemoteStore(host: "cache.internal", prefix: "ci")
public final class RedisRemoteStore: RemoteStore {
    /// The server's host name or address (a cluster's first seed).
    public let host: String
    /// The server's port (a cluster's first seed's).
    public let port: Int
    /// Where the store starts: the server, or a cluster's seed nodes.
    ///
    ///     store.seeds.map(\.description)   // ["10.0.0.1:7000", "10.0.0.2:7000"]
    public let seeds: [RedisEndpoint]
    /// Whether the seeds are nodes of a Redis Cluster.
    ///
    ///     if store.isCluster { print("routed by hash slot") }
    public let isCluster: Bool
    /// What every key starts with, before `:blob:` or `:key:`.
    public let prefix: String
    /// How long one call may take in all, connecting included.
    public let timeout: Duration
    /// The database `SELECT`ed on each new connection (0, Redis's default, sends none).
    public let database: Int
    /// The longest reply taken, in bytes; a longer one is an error and its connection is dropped.
    /// The initializers clamp it to `0...maxReplyBytesCeiling`.
    public let maxReplyBytes: Int
    /// The most `maxReplyBytes` can be: 2 GiB, past Redis's own default bulk limit (512 MiB) and
    /// within what a SwiftNIO buffer holds (4 GiB).
    ///
    ///     RedisRemoteStore(maxReplyBytes: .max).maxReplyBytes == RedisRemoteStore.maxReplyBytesCeiling   // true
    public static let maxReplyBytesCeiling = 1 << 31
    /// TLS settings, or nil for plain TCP.
    ///
    ///     store.tls?.caFile   // "/etc/redis/ca.pem"
    public let tls: RedisTLS?
    private let user: String?
    let pool: RedisConnectionPool
    private let cluster: RedisCluster?

    /// A store on `host:port` under `prefix`; `password` (with `user`, for an ACL user) is sent
    /// as `AUTH` on each new connection; `tls` makes every connection TLS. A port outside
    /// `RedisEndpoint.ports` makes every call fail (`RemoteStoreError.redis`) rather than this
    /// initializer, which does not throw.
    ///
    ///     let store = RedisRemoteStore(host: "127.0.0.1", port: 6379, prefix: "blobcache")
    public init(host: String = "127.0.0.1", port: Int = 6379, prefix: String = "blobcache", timeout: Duration = .seconds(2),
                user: String? = nil, password: String? = nil, database: Int = 0,
                maxReplyBytes: Int = HTTPRemoteStore.maxObjectBytes, tls: RedisTLS? = nil) {
        self.host = host
        self.port = port
        seeds = [RedisEndpoint(host: host, port: port)]
        isCluster = false
        self.prefix = prefix
        self.timeout = timeout
        self.database = database
        let limit = min(max(maxReplyBytes, 0), Self.maxReplyBytesCeiling)
        self.maxReplyBytes = limit
        self.tls = tls
        self.user = password == nil ? nil : user
        pool = RedisConnectionPool(settings: RedisConnectionSettings(
            tls: tls.map(RedisTLSContext.init), credentials: password.map { RedisCredentials(user: user, password: $0) }, database: database, limit: limit))
        cluster = nil
    }

    /// A store on the Redis Cluster that `seeds` belong to (any of its nodes; more than one in
    /// case some are down). The slot map is loaded from the first seed that answers, on the
    /// first call. Credentials and TLS apply to every node.
    ///
    ///     let store = RedisRemoteStore(cluster: [RedisEndpoint(host: "10.0.0.1"), RedisEndpoint(host: "10.0.0.2")], prefix: "ci")
    public init(cluster seeds: [RedisEndpoint], prefix: String = "blobcache", timeout: Duration = .seconds(2),
                user: String? = nil, password: String? = nil,
                maxReplyBytes: Int = HTTPRemoteStore.maxObjectBytes, tls: RedisTLS? = nil) {
        precondition(!seeds.isEmpty, "a cluster store needs at least one seed node")
        host = seeds[0].host
        port = seeds[0].port
        self.seeds = seeds
        isCluster = true
        self.prefix = prefix
        self.timeout = timeout
        database = 0
        let limit = min(max(maxReplyBytes, 0), Self.maxReplyBytesCeiling)
        self.maxReplyBytes = limit
        self.tls = tls
        self.user = password == nil ? nil : user
        pool = RedisConnectionPool(settings: RedisConnectionSettings(
            tls: tls.map(RedisTLSContext.init), credentials: password.map { RedisCredentials(user: user, password: $0) }, database: 0, limit: limit))
        cluster = RedisCluster(seeds: seeds, pool: pool)
    }

    /// The store's URL without the password, for logs: `redis://[user@]host:port[/db]/prefix`,
    /// `rediss://…` with TLS (and `?ca=` when a CA file is given), `redis+cluster://h1:p1,h2:p2/prefix`
    /// for a cluster.
    public var description: String {
        let scheme = (tls == nil ? "redis" : "rediss") + (isCluster ? "+cluster" : "")
        let user = self.user.map { "\($0)@" } ?? ""
        let database = self.database == 0 ? "" : "/\(self.database)"
        var query = ""
        if let tls {
            var items: [String] = []
            if let caFile = tls.caFile { items.append("ca=\(caFile)") }
            if !tls.verifiesHostname { items.append("verify=ca") }
            if !items.isEmpty { query = "?" + items.joined(separator: "&") }
        }
        return "\(scheme)://\(user)\(seeds.map(\.description).joined(separator: ","))\(database)/\(prefix)\(query)"
    }

    /// The Redis key of `object`.
    ///
    ///     store.redisKey(of: .blob(id))   // "blobcache:blob:5d41402abc4b2a76b9719d911017c592"
    public func redisKey(of object: RemoteObject) -> String { "\(prefix):\(object.kind.rawValue):\(object.hex)" }

    /// `GET`: the object's bytes, or nil when Redis does not have it.
    ///
    ///     let bytes = try store.get(.blob(id))
    public func get(_ object: RemoteObject) throws -> [UInt8]? {
        switch try run("GET", object) {
        case .bulk(let value): return value
        case .null: return nil
        default: throw RemoteStoreError.redis("GET answered neither a string nor nil")
        }
    }

    /// `EXISTS`: whether Redis has the object.
    ///
    ///     if try store.exists(.blob(id)) { skipUpload() }
    public func exists(_ object: RemoteObject) throws -> Bool {
        guard case .integer(let count) = try run("EXISTS", object) else {
            throw RemoteStoreError.redis("EXISTS answered no integer")
        }
        return count > 0
    }

    /// `SET`, with `PXAT` when the object expires.
    ///
    ///     try store.put(.blob(id), bytes: bytes, expiresAt: nil)
    public func put(_ object: RemoteObject, bytes: [UInt8], expiresAt: Date?) throws {
        var arguments: [[UInt8]] = [bytes]
        if let expiresAt {
            let milliseconds = max(1, Int64((expiresAt.timeIntervalSince1970 * 1000).rounded(.up)))
            arguments += [Array("PXAT".utf8), Array(String(milliseconds).utf8)]
        }
        _ = try run("SET", object, arguments)
    }

    /// `DEL`: no error when the object was not there.
    ///
    ///     try store.delete(.key("avatar/42"))
    public func delete(_ object: RemoteObject) throws {
        _ = try run("DEL", object)
    }

    /// Sends `command key arguments…` to the node that holds `object`; an error reply throws.
    private func run(_ command: String, _ object: RemoteObject, _ arguments: [[UInt8]] = []) throws -> RESPValue {
        guard MultiThreadedEventLoopGroup.currentEventLoop == nil else { throw RemoteStoreError.calledOnEventLoop }
        let deadline = ContinuousClock.now + timeout
        let key = Array(redisKey(of: object).utf8)
        let all = [Array(command.utf8), key] + arguments
        let reply = try cluster?.send(all, key: key, until: deadline) ?? pool.send(all, to: seeds[0], until: deadline)
        if case .error(let message) = reply { throw RemoteStoreError.redis(message) }
        return reply
    }
}
