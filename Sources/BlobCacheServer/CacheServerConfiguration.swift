import Logging
import NIOSSL

extension CacheServer {
    /// How a `CacheServer` listens and behaves.
    ///
    ///     var configuration = CacheServer.Configuration()
    ///     configuration.address = try ListenAddress(parsing: "127.0.0.1:0")
    ///     configuration.onListening = { print("listening on http://\($0)") }
    public struct Configuration: Sendable {
        /// Where to listen; loopback port 8080 by default.
        public var address: ListenAddress
        /// Longest request body taken, in bytes; a longer PUT gets 413 and nothing is stored.
        public var maxBodyBytes: Int
        /// Where the server logs: failures at warning, one line per request at info with
        /// `accessLog`, or at debug without it.
        public var logger: Logger
        /// Called once the server listens, with the real address (port 0 resolved).
        public var onListening: @Sendable (ListenAddress) -> Void
        /// Connections served at once; more wait in the listen backlog until one closes.
        public var maxConnections = CacheServer.Configuration.defaultMaxConnections
        /// How long a connection may stay silent: between requests, while a request's head
        /// arrives, between two reads of its body, and while a reply waits for the client to
        /// read. Past it the connection is closed.
        public var idleTimeout = CacheServer.Configuration.defaultIdleTimeout
        /// After SIGTERM or SIGINT, how long requests in flight may take before they are cut.
        public var shutdownTimeout = CacheServer.Configuration.defaultShutdownTimeout
        /// Host names (besides loopback names and addresses) a request's Host may name. When
        /// listening on loopback, or when this is not empty, any other Host gets 421: a web page
        /// cannot reach the server through a name it controls (DNS rebinding).
        public var allowedHosts: [String] = []
        /// Who may read and write; nil serves everyone (trusted networks only).
        public var credentials: Credentials?
        /// With `credentials`: let requests without any read (GET, HEAD, PROPFIND).
        public var allowUnauthenticatedReads = false
        /// Serve HTTPS with this certificate and key; nil serves plain HTTP.
        public var tls: TLSConfiguration?
        /// One line per request at `info` (method, path, status, bytes, milliseconds, client,
        /// credential name).
        public var accessLog = false

        /// The default connection cap: 512.
        ///
        ///     let cap = CacheServer.Configuration.defaultMaxConnections
        public static let defaultMaxConnections = 512
        /// The default idle timeout: 60 seconds.
        ///
        ///     let timeout = CacheServer.Configuration.defaultIdleTimeout
        public static let defaultIdleTimeout: Duration = .seconds(60)
        /// The default shutdown timeout: 10 seconds.
        ///
        ///     let timeout = CacheServer.Configuration.defaultShutdownTimeout
        public static let defaultShutdownTimeout: Duration = .seconds(10)

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

    /// A server TLS configuration from PEM files: the certificate chain (leaf first) and its
    /// private key. Throws NIOSSL's error when either cannot be read or parsed.
    ///
    ///     configuration.tls = try CacheServer.tlsConfiguration(certificate: "cert.pem", key: "key.pem")
    public static func tlsConfiguration(certificate: String, key: String) throws -> TLSConfiguration {
        let chain = try NIOSSLCertificate.fromPEMFile(certificate)
        guard !chain.isEmpty else { throw NIOSSLError.failedToLoadCertificate }
        let privateKey = try NIOSSLPrivateKey(file: key, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) },
                                                                     privateKey: .privateKey(privateKey))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
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
