import Logging
import ServiceLifecycle
import UnixSignals

extension CacheServer {
    /// Runs the server in a `ServiceGroup` that shuts it down gracefully on SIGTERM or SIGINT:
    /// it stops accepting connections, finishes the requests in flight, and returns. The
    /// cache stays open; close it after.
    ///
    ///     try await server.runUntilSignalled()
    ///     try cache.close()
    public func runUntilSignalled(signals: [UnixSignal] = [.sigterm, .sigint]) async throws {
        let group = ServiceGroup(services: [self], gracefulShutdownSignals: signals, logger: configuration.logger)
        try await group.run()
    }
}
