import Synchronization

/// Idle connections kept per node (at most `maxIdlePerNode` each, for at most `maxIdleNodes`
/// nodes), so that a call reuses one instead of connecting, and so that a read never waits
/// behind the write-behind queue's upload: each call takes its own connection and gives it back
/// after. A connection that failed is dropped (closed), never given back.
///
///     let reply = try pool.send([Array("GET".utf8), key], to: node, until: deadline)
final class RedisConnectionPool: Sendable {
    let settings: RedisConnectionSettings
    private let idle = Mutex<[RedisEndpoint: [RedisConnection]]>([:])
    static let maxIdlePerNode = 4
    /// A cluster has a few dozen masters at most; a server naming more nodes than this in its
    /// redirections does not get a socket kept for each.
    static let maxIdleNodes = 64

    init(settings: RedisConnectionSettings) {
        self.settings = settings
    }

    /// Sends one command to `endpoint` on an idle connection or a new one, preceded by `ASKING`
    /// when `asking` (a cluster's one-time redirection during a slot's migration). An idle
    /// connection that fails before any byte of an answer came back is most likely one the
    /// server closed while it sat in the pool (its FIN not yet read): the command is sent once
    /// more, on a new connection, within the same deadline.
    func send(_ arguments: [[UInt8]], shape: RESPShape = .scalar, to endpoint: RedisEndpoint, asking: Bool = false,
              until deadline: ContinuousClock.Instant) throws -> RESPValue {
        if let reused = takeIdle(endpoint) {
            let heard = reused.bytesReceived
            do {
                return try exchange(arguments, shape: shape, on: reused, asking: asking, until: deadline)
            } catch RemoteStoreError.calledOnEventLoop {
                throw RemoteStoreError.calledOnEventLoop
            } catch {
                guard reused.bytesReceived == heard, ContinuousClock.now < deadline else { throw error }
            }
        }
        let connection = try RedisConnection(to: endpoint, settings: settings, until: deadline)
        return try exchange(arguments, shape: shape, on: connection, asking: asking, until: deadline)
    }

    /// Closes the idle connections to every node not in `nodes` (those a cluster's map no
    /// longer names).
    func keepIdle(only nodes: Set<RedisEndpoint>) {
        let dropped = idle.withLock { idle in
            let gone = idle.filter { !nodes.contains($0.key) }
            for node in gone.keys { idle[node] = nil }
            return gone
        }
        _ = dropped  // closed as they are released, outside the lock
    }

    /// How many nodes idle connections are kept for.
    var idleNodeCount: Int { idle.withLock { $0.count } }

    private func exchange(_ arguments: [[UInt8]], shape: RESPShape, on connection: RedisConnection, asking: Bool,
                          until deadline: ContinuousClock.Instant) throws -> RESPValue {
        if asking, case .error(let message) = try connection.send([Array("ASKING".utf8)], until: deadline) {
            giveBack(connection)
            throw RemoteStoreError.redis("\(connection.endpoint): ASKING refused: \(message)")
        }
        let reply = try connection.send(arguments, shape: shape, until: deadline)
        giveBack(connection)
        return reply
    }

    private func takeIdle(_ endpoint: RedisEndpoint) -> RedisConnection? {
        while let reused = idle.withLock({ idle in
            defer { if idle[endpoint]?.isEmpty == true { idle[endpoint] = nil } }
            return idle[endpoint]?.popLast()
        }) {
            if reused.isOpen { return reused }  // one the server closed while idle is dropped
        }
        return nil
    }

    private func giveBack(_ connection: RedisConnection) {
        guard connection.isOpen else { return }
        idle.withLock { idle in
            guard idle[connection.endpoint] != nil || idle.count < Self.maxIdleNodes else { return }
            if idle[connection.endpoint, default: []].count < Self.maxIdlePerNode { idle[connection.endpoint, default: []].append(connection) }
        }
    }
}
