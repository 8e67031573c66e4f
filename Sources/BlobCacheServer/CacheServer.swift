import BlobCache
import Foundation
import Hummingbird
import HummingbirdCore
import HTTPTypes
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// One BlobCache directory served over HTTP, for the HTTP caches of ccache, sccache (WebDAV)
/// and Bazel: the request path without its leading `/` is the key; GET, HEAD, PUT and DELETE
/// read and change it; `GET /status` returns the cache's figures as JSON. There is no
/// authentication, so listen on loopback unless the network is trusted.
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
    /// Where it listens, its body limit, its logger and its listening callback.
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
        let address = configuration.address
        let bound = BoundAddress(address)
        let responder = CacheResponder(cache: cache, maxBodyBytes: configuration.maxBodyBytes,
                                       listen: { bound.current.description }, logger: configuration.logger)
        let logger = configuration.logger
        let maxBody = configuration.maxBodyBytes
        let onListening = configuration.onListening
        // Hummingbird's own lines ("Server started…") only when the user asked for debug detail.
        var serverLogger = logger
        if logger.logLevel > .debug { serverLogger.logLevel = max(logger.logLevel, .warning) }

        let server = try HTTPServerBuilder.http1().buildServer(
            configuration: ServerConfiguration(address: .hostname(address.host, port: address.port)),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: serverLogger,
            responder: { request, writer, _ in
                let start = ContinuousClock.now
                if BodyReader.expectsContinue(request, limit: maxBody) {
                    try await writer.writeInformationalHead(HTTPResponse(status: .continue))
                }
                let reply = await responder.respond(to: request)
                try await writer.write(response: reply.head, body: reply.responseBody)
                RequestLog.record(request, reply, since: start, logger: logger)
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
