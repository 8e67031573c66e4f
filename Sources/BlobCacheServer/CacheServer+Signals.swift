import Logging
import ServiceLifecycle
import UnixSignals

extension CacheServer {
    /// Runs the server in a `ServiceGroup` that shuts it down gracefully on SIGTERM or SIGINT:
    /// it stops accepting connections and finishes the requests in flight; those still running
    /// after `configuration.shutdownTimeout` are cut (their connections closed). Then it
    /// returns. The cache stays open; close it after.
    ///
    ///     try await server.runUntilSignalled()
    ///     try cache.close()
    public func runUntilSignalled(signals: [UnixSignal] = [.sigterm, .sigint]) async throws {
        var group = ServiceGroupConfiguration(services: [.init(service: self)], gracefulShutdownSignals: signals, logger: configuration.logger)
        group.maximumGracefulShutdownDuration = configuration.shutdownTimeout
        try await ServiceGroup(configuration: group).run()
    }
}
