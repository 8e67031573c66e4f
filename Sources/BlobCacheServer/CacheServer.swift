import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HTTPTypes
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// One BlobCache directory served over HTTP(S), for the HTTP caches of ccache, sccache
/// (WebDAV) and Bazel: the request path without its leading `/` is the key; GET, HEAD, PUT and
/// DELETE read and change it. `GET /status` returns the cache's figures as JSON, `/metrics`
/// Prometheus' text format, `/healthz` whether the cache can be written; `/_/KEY` reaches any
/// key, those three names included.
///
/// Bounded under abuse: at most `maxConnections` at once, an idle timeout on every silence, a
/// Host check against DNS rebinding, and optional credentials (`Credentials`) and TLS.
///
/// A `Service`: run it in a `ServiceGroup` (or call `runUntilSignalled()`); it returns once a
/// graceful shutdown has finished the requests in flight. Closing the cache is the caller's.
///
///     let server = CacheServer(cache: cache, configuration: .init(address: .default))
///     try await server.runUntilSignalled()
///     try cache.close()
public struct CacheServer: Service {
    /// The cache the server reads and writes.
    public let cache: BlobCache
    /// Where it listens, its limits, credentials and TLS, its logger and its listening callback.
    public let configuration: Configuration

    /// A server for `cache`; nothing listens until `run()`.
    ///
    ///     let server = CacheServer(cache: cache, configuration: configuration)
    public init(cache: BlobCache, configuration: Configuration = Configuration()) {
        self.cache = cache
        self.configuration = configuration
    }

    /// Listens and answers requests until a graceful shutdown (or cancellation). Throws
    /// `CacheServerError.addressInUse` when the port is taken, `.cannotListen` for other
    /// failures to bind.
    ///
    ///     try await ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm], logger: logger).run()
    public func run() async throws {
        let configuration = self.configuration
        let address = configuration.address
        let bound = BoundAddress(address)
        let metrics = ServerMetrics()
        let responder = CacheResponder(cache: cache, maxBodyBytes: configuration.maxBodyBytes,
                                       listen: { bound.current.description }, logger: configuration.logger, metrics: metrics)
        let gate = RequestGate(hosts: HostCheck(listeningOn: address, allowed: configuration.allowedHosts),
                               credentials: configuration.credentials,
                               allowUnauthenticatedReads: configuration.allowUnauthenticatedReads)
        let logger = configuration.logger
        let maxBody = configuration.maxBodyBytes
        let onListening = configuration.onListening
        let accessLog = configuration.accessLog
        // Hummingbird's own lines ("Server started…") only when the user asked for debug detail.
        var serverLogger = logger
        if logger.logLevel > .debug { serverLogger.logLevel = max(logger.logLevel, .warning) }

        let idle = TimeAmount.nanoseconds(Self.nanoseconds(configuration.idleTimeout))
        let http1 = HTTPServerBuilder.http1(configuration: HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionWatch(metrics: metrics, stallTimeout: idle)], idleTimeout: idle))
        let builder = try configuration.tls.map { try HTTPServerBuilder.tls(http1, tlsConfiguration: $0) } ?? http1
        let server = try builder.buildServer(
            configuration: ServerConfiguration(
                address: .hostname(address.host, port: address.port),
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxConnections, logger: serverLogger)),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: serverLogger,
            responder: { request, writer, channel in
                let start = ContinuousClock.now
                let target = RequestTarget(path: request.uri.path)
                var credential: String?
                var reply: Reply
                var admitted = false
                switch await gate.verdict(for: request, target: target) {
                case .refused(let refusal):
                    reply = refusal
                    reply.closesConnection = true
                case .admitted(let name):
                    admitted = true
                    credential = name
                    if BodyReader.expectsContinue(request, limit: maxBody) {
                        try await writer.writeInformationalHead(HTTPResponse(status: .continue))
                    }
                    reply = await responder.respond(to: request, target: target)
                }
                // A refused request's body is not read to its end: the connection ends with the
                // reply, so a refused client cannot hold it by sending a body for ever.
                if reply.closesConnection { reply.headers[.connection] = "close" }
                defer {
                    let elapsed = ContinuousClock.now - start
                    let isPut = request.method == .put
                    metrics.record(method: request.method, status: reply.status.code, duration: elapsed,
                                   received: isPut && admitted ? reply.loggedBytes : 0, sent: isPut ? 0 : reply.loggedBytes,
                                   lookup: Self.lookup(request, target: target, status: reply.status.code))
                    RequestLog.record(request, reply, elapsed: elapsed, client: channel.remoteAddress, credential: credential,
                                      accessLog: accessLog, logger: logger)
                }
                try await writer.write(response: reply.head, body: reply.responseBody)
                if reply.closesConnection { channel.close(mode: .input, promise: nil) }
            },
            onServerRunning: { channel in
                let actual = ListenAddress(host: address.host, port: channel.localAddress?.port ?? address.port)
                bound.current = actual
                onListening(actual)
            })
        do {
            try await server.run()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw CacheServerError.addressInUse(address)
        } catch let error as IOError {
            throw CacheServerError.cannotListen(address, reason: "\(error)")
        }
    }

    /// Whether a request was a GET or HEAD of a key that found it, or did not.
    private static func lookup(_ request: Request, target: RequestTarget, status: Int) -> ServerMetrics.Lookup? {
        guard case .key = target, request.method == .get || request.method == .head else { return nil }
        switch status {
        case 200: return .hit
        case 404: return .miss
        default: return nil
        }
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(1_000_000, min(seconds, 86_400 * 365) * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// The address the server really listens on (the port is known only once it does).
final class BoundAddress: Sendable {
    private let value: Mutex<ListenAddress>

    init(_ address: ListenAddress) { value = Mutex(address) }

    var current: ListenAddress {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
extension CacheServer: CustomStringConvertible {
    /// `CacheServer(ADDRESS, DIR)`, as service-lifecycle's log lines name the service.
    ///
    ///     print(server)   // CacheServer(127.0.0.1:8080, /home/me/.cache/blobcache)
    public var description: String { "CacheServer(\(configuration.address), \(cache.directory))" }
}
