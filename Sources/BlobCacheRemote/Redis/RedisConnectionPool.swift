import Synchronization

/// Idle connections kept per node (at most `maxIdlePerNode` each), so that a call reuses one
/// instead of connecting, and so that a read never waits behind the write-behind queue's
/// upload: each call takes its own connection and gives it back after. A connection that
/// failed is dropped (closed), never given back.
///
///     let reply = try pool.send([Array("GET".utf8), key], to: node, until: deadline)
final class RedisConnectionPool: Sendable {
    let settings: RedisConnectionSettings
    private let idle = Mutex<[RedisEndpoint: [RedisConnection]]>([:])
    static let maxIdlePerNode = 4

    init(settings: RedisConnectionSettings) {
        self.settings = settings
    }

    /// Sends one command to `endpoint` on an idle connection or a new one, preceded by `ASKING`
    /// when `asking` (a cluster's one-time redirection during a slot's migration).
    func send(_ arguments: [[UInt8]], shape: RESPShape = .scalar, to endpoint: RedisEndpoint, asking: Bool = false,
              until deadline: ContinuousClock.Instant) throws -> RESPValue {
        let connection = try take(endpoint, until: deadline)
        if asking, case .error(let message) = try connection.send([Array("ASKING".utf8)], until: deadline) {
            giveBack(connection)
            throw RemoteStoreError.redis("\(endpoint): ASKING refused: \(message)")
        }
        let reply = try connection.send(arguments, shape: shape, until: deadline)
        giveBack(connection)
        return reply
    }

    private func take(_ endpoint: RedisEndpoint, until deadline: ContinuousClock.Instant) throws -> RedisConnection {
        while let reused = idle.withLock({ $0[endpoint]?.popLast() }) {
            if reused.isOpen { return reused }  // one the server closed while idle is dropped
        }
        return try RedisConnection(to: endpoint, settings: settings, until: deadline)
    }

    private func giveBack(_ connection: RedisConnection) {
        guard connection.isOpen else { return }
        idle.withLock { idle in
            if idle[connection.endpoint, default: []].count < Self.maxIdlePerNode { idle[connection.endpoint, default: []].append(connection) }
        }
    }
}
