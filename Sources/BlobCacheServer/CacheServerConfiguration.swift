import Logging

extension CacheServer {
    /// How a `CacheServer` listens and behaves.
    ///
    ///     var configuration = CacheServer.Configuration()
    ///     configuration.address = try ListenAddress(parsing: "127.0.0.1:0")
    ///     configuration.onListening = { print("listening on http://\($0)") }
    public struct Configuration: Sendable {
        /// Where to listen; loopback port 8080 by default (the server has no authentication).
        public var address: ListenAddress
        /// Longest request body taken, in bytes; a longer PUT gets 413 and nothing is stored.
        public var maxBodyBytes: Int
        /// Where the server logs: one line per request at debug, failures at warning.
        public var logger: Logger
        /// Called once the server listens, with the real address (port 0 resolved).
        public var onListening: @Sendable (ListenAddress) -> Void

        /// The default body limit: 256 MiB.
        ///
        ///     let limit = CacheServer.Configuration.defaultMaxBodyBytes
        public static let defaultMaxBodyBytes = 256 << 20

        /// A configuration; every argument has the server's default.
        ///
        ///     let configuration = CacheServer.Configuration(address: .default, maxBodyBytes: 64 << 20)
        public init(address: ListenAddress = .default, maxBodyBytes: Int = defaultMaxBodyBytes,
                    logger: Logger = CacheServer.standardErrorLogger(level: .info),
                    onListening: @escaping @Sendable (ListenAddress) -> Void = { _ in }) {
            self.address = address
            self.maxBodyBytes = maxBodyBytes
            self.logger = logger
            self.onListening = onListening
        }
    }

    /// A logger writing to standard error at `level` (swift-log's stream handler).
    ///
    ///     let logger = CacheServer.standardErrorLogger(level: .debug)
    public static func standardErrorLogger(level: Logger.Level) -> Logger {
        var logger = Logger(label: "blobcache.serve", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = level
        return logger
    }

    /// The swift-log level named `name` (`trace`, `debug`, `info`, `notice`, `warning`,
    /// `error`, `critical`), or nil.
    ///
    ///     let level = CacheServer.logLevel(named: "debug")
    public static func logLevel(named name: String) -> Logger.Level? {
        Logger.Level(rawValue: name.lowercased())
    }
}
