import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// What every new connection to a store's nodes needs: TLS or not, `AUTH` and `SELECT`, and
/// the reply limit.
struct RedisConnectionSettings: Sendable {
    let tls: RedisTLSContext?
    /// The `AUTH` arguments: an ACL user (or none) and a password.
    let credentials: RedisCredentials?
    /// `SELECT`ed when not 0 (a cluster has only database 0).
    let database: Int
    /// The longest bulk string a reply may carry.
    let limit: Int
}

/// One connection to one Redis node over SwiftNIO, used by one call at a time and blocking
/// that call's thread. Every wait is bounded by the call's deadline: when it passes, the
/// connection is closed, which fails whatever was waiting. A method that throws leaves the
/// connection unusable (closed or in doubt); an error reply is returned, not thrown, since the
/// connection survives it.
///
///     let connection = try RedisConnection(to: endpoint, settings: settings, until: deadline)
///     let reply = try connection.send([Array("GET".utf8), key], until: deadline)
final class RedisConnection: Sendable {
    let endpoint: RedisEndpoint
    private let channel: any Channel
    private let received: RESPByteCounter
    private let firstFailure = RedisFirstFailure()

    /// Connects (TLS included, when the settings ask for it), then sends `AUTH` and `SELECT`.
    init(to endpoint: RedisEndpoint, settings: RedisConnectionSettings, until deadline: ContinuousClock.Instant) throws {
        guard MultiThreadedEventLoopGroup.currentEventLoop == nil else { throw RemoteStoreError.calledOnEventLoop }
        // Checked here, where every connection starts, since the public initializers do not
        // throw: the C library would take port 70000 as 4464.
        guard RedisEndpoint.ports.contains(endpoint.port) else {
            throw RemoteStoreError.redis("\(endpoint): the port must be 1 to 65535")
        }
        self.endpoint = endpoint
        let received = RESPByteCounter()
        self.received = received
        let ssl = try settings.tls?.context()
        let serverName = RedisTLSContext.serverName(for: endpoint.host)
        let limit = settings.limit
        let firstFailure = self.firstFailure
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.nanoseconds(try Self.nanoseconds(until: deadline, endpoint: endpoint)))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let expectations = RESPExpectations()
                    if let ssl {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: ssl, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHandler(received)
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RESPDecoder(limit: limit, expectations: expectations)))
                    try channel.pipeline.syncOperations.addHandler(RedisChannelHandler(expectations: expectations, firstFailure: firstFailure))
                }
            }
        do {
            channel = try bootstrap.connect(host: endpoint.host, port: endpoint.port).wait()
        } catch {
            throw RemoteStoreError.redis("\(endpoint): cannot connect: \(error)")
        }
        if let credentials = settings.credentials {
            let arguments = [Array("AUTH".utf8)] + ([credentials.user, credentials.password] as [String?]).compactMap { $0.map { Array($0.utf8) } }
            if case .error(let message) = try send(arguments, until: deadline) {
                channel.close(promise: nil)
                throw RemoteStoreError.redis("\(endpoint): AUTH refused: \(message)")
            }
        }
        if settings.database != 0 {
            if case .error(let message) = try send([Array("SELECT".utf8), Array(String(settings.database).utf8)], until: deadline) {
                channel.close(promise: nil)
                throw RemoteStoreError.redis("\(endpoint): SELECT \(settings.database) refused: \(message)")
            }
        }
    }

    deinit { channel.close(promise: nil) }

    /// Whether the connection can take another command (nothing broke it).
    var isOpen: Bool { channel.isActive }

    /// How many bytes of replies (after TLS) have arrived so far: unchanged across a failed
    /// command when no byte of its answer came back.
    var bytesReceived: Int { received.count }

    /// Sends one command and waits for its reply until `deadline`. The reply must fit `shape`
    /// (checked from its first line); one that does not, a timeout or a broken connection
    /// throws `RemoteStoreError.redis`, naming the node but never an argument.
    func send(_ arguments: [[UInt8]], shape: RESPShape = .scalar, until deadline: ContinuousClock.Instant) throws -> RESPValue {
        guard MultiThreadedEventLoopGroup.currentEventLoop == nil else { throw RemoteStoreError.calledOnEventLoop }
        let nanoseconds: Int64
        do {
            nanoseconds = try Self.nanoseconds(until: deadline, endpoint: endpoint)
        } catch {
            channel.close(promise: nil)
            throw error
        }
        var bytes = channel.allocator.buffer(capacity: arguments.reduce(16) { $0 + $1.count + 16 })
        bytes.writeRESPCommand(arguments)
        let channel = self.channel
        let reply = channel.eventLoop.makePromise(of: RESPValue.self)
        let timer = channel.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) {
            reply.fail(Timeout())
            channel.close(promise: nil)
        }
        reply.futureResult.whenComplete { _ in timer.cancel() }
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { reply.fail($0) }
        channel.writeAndFlush(RedisRequest(bytes: bytes, shape: shape, promise: reply), promise: written)
        do {
            do {
                return try reply.futureResult.wait()
            } catch let error as ChannelError where error == .ioOnClosedChannel || error == .alreadyClosed {
                // Written after the channel closed: what closed it is the answer.
                throw firstFailure.error ?? error
            }
        } catch is Timeout {
            throw RemoteStoreError.redis("\(endpoint): no answer within the remote timeout")
        } catch let error as RESPDecodingError {
            throw RemoteStoreError.redis("\(endpoint): \(error.description)")
        } catch let error as NIOSSLError {
            throw RemoteStoreError.redis("\(endpoint): TLS handshake failed (\(error)); check that the server's certificate is signed by the trusted CA (?ca=) and names the host")
        } catch let error as NIOSSLExtraError where error == .failedToValidateHostname {
            throw RemoteStoreError.redis("\(endpoint): TLS hostname verification failed: the server's certificate does not name \(endpoint.host) (or connect with verify=ca)")
        } catch let error as NIOSSLExtraError {
            throw RemoteStoreError.redis("\(endpoint): TLS: \(error)")
        } catch let error as BoringSSLError {
            throw RemoteStoreError.redis("\(endpoint): TLS: \(error)")
        } catch let error as RemoteStoreError {
            throw error
        } catch {
            throw RemoteStoreError.redis("\(endpoint): \(error)")
        }
    }

    private struct Timeout: Error {}

    /// What is left until `deadline`, in nanoseconds; throws once nothing is.
    static func nanoseconds(until deadline: ContinuousClock.Instant, endpoint: RedisEndpoint) throws -> Int64 {
        let left = deadline - .now
        guard left > .zero else { throw RemoteStoreError.redis("\(endpoint): no answer within the remote timeout") }
        let (seconds, attoseconds) = left.components
        return max(1_000_000, min(seconds, 86_400) * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
