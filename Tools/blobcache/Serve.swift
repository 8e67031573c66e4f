#if BLOBCACHE_NETWORK
import ArgumentParser
import BlobCache
import BlobCacheServer
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOSSL

/// `blobcache serve`: the cache directory as an HTTP cache server.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the cache over HTTP to ccache, sccache (WebDAV) and Bazel's HTTP remote cache.",
        discussion: """
            The request path without its leading '/' is the key: GET (200 or 404), HEAD, PUT (201 new, \
            204 replaced) and DELETE (204 or 404). Bazel's /cas/<sha256> PUTs are checked against the \
            body's SHA-256 (400 on a mismatch); /ac/ entries are stored as they come. Bodies over \
            --max-body get 413; a full disk 507.

            The server's own routes: GET /status (the cache's figures as JSON), /metrics (Prometheus \
            text format), /healthz (200 when the cache can be written, 503 otherwise; needs no \
            credentials). /_/KEY reaches any key as it is, so the key 'status' is /_/status.

            ccache:  remote_storage = http://[USER:PASS@]127.0.0.1:8080/   (or CCACHE_REMOTE_STORAGE)
            sccache: SCCACHE_WEBDAV_ENDPOINT=http://127.0.0.1:8080/ (SCCACHE_WEBDAV_USERNAME and _PASSWORD, \
            or SCCACHE_WEBDAV_TOKEN)
            Bazel:   --remote_cache=http://127.0.0.1:8080 (--remote_header='Authorization=Bearer TOKEN')

            Without --auth-file anyone who can reach the address can read and replace entries: the \
            default address is loopback. With it, every request but /healthz needs a credential from \
            the file (HTTP Basic or a bearer token; 401 without one, 403 for a read-only credential's \
            write); make its lines with 'blobcache credential'. On loopback, a request whose Host is \
            not a loopback name gets 421 (a web page cannot reach the server by DNS rebinding); \
            --allow-host adds names.

            Once listening, prints 'blobcache serve: listening on http://HOST:PORT' (https with TLS; \
            the real port, so --listen 127.0.0.1:0 works). SIGTERM or SIGINT stops accepting, finishes \
            the requests in flight (cutting those still running after --shutdown-timeout), closes the \
            cache and exits 0. The options of this command go after 'serve' (the global ones anywhere). \
            Exit codes: 0 stopped by a signal; 2 the port is in use, the TLS files cannot be used, or \
            another error; 8 the cache cannot be opened; 9 the auth file cannot be used (unreadable, \
            readable by its group or others, or a malformed line); 64 usage.
            """)

    @Option(help: ArgumentHelp(
        "Address to listen on; the default is loopback only. Port 0 picks a free port.",
        valueName: "HOST:PORT"))
    var listen = ListenAddress.default.description

    @Option(help: ArgumentHelp("Connections served at once (default 512); more wait in the listen backlog until one closes.",
                               valueName: "N"))
    var maxConnections = CacheServer.Configuration.defaultMaxConnections

    @Option(help: ArgumentHelp(
        "Close a connection silent this long (default 60): between requests, while a request's headers arrive, between body reads, and while a reply waits for the client to read.",
        valueName: "SECONDS"))
    var idleTimeout: Double = 60

    @Option(help: ArgumentHelp("After SIGTERM or SIGINT, cut the requests still running after this long (default 10).",
                               valueName: "SECONDS"))
    var shutdownTimeout: Double = 10

    @Option(help: ArgumentHelp("A Host name the server answers besides loopback names and addresses (repeatable). Given, it applies on any address; without it, only on loopback.",
                               valueName: "NAME"))
    var allowHost: [String] = []

    @Option(help: ArgumentHelp("Credentials, one a line (make them with 'blobcache credential'); requests without a valid one get 401. Refused when its group or others may read it.",
                               valueName: "PATH"))
    var authFile: String?

    @Flag(help: "With --auth-file: let requests without credentials read (GET, HEAD, OPTIONS, PROPFIND, /status, /metrics); writes still need one.")
    var allowUnauthenticatedReads = false

    @Option(help: ArgumentHelp("Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key.", valueName: "PATH"))
    var tlsCertificate: String?

    @Option(help: ArgumentHelp("The PEM private key of --tls-certificate.", valueName: "PATH"))
    var tlsKey: String?

    @Flag(help: "Log one line per request at info: client, credential, method, path, status, bytes, milliseconds.")
    var accessLog = false

    @Option(help: ArgumentHelp("Longest request body taken (default 256Mi); longer PUTs get 413 and nothing is stored.",
                               valueName: "SIZE"),
            transform: Size.parse)
    var maxBody: Int?

    @Option(help: ArgumentHelp(
        "Log level on standard error: trace, debug (one line per request), info, notice, warning, error, critical.",
        valueName: "LEVEL"))
    var logLevel = "info"

    @OptionGroup var global: GlobalOptions

    func run() throws {
        let address: ListenAddress
        do { address = try ListenAddress(parsing: listen) } catch {
            Failure.say("\(error)")
            throw ExitCode.validationFailure
        }
        guard let level = CacheServer.logLevel(named: logLevel) else {
            Failure.say("unknown --log-level '\(logLevel)': use trace, debug, info, notice, warning, error or critical")
            throw ExitCode.validationFailure
        }
        if global.namespace != nil {
            // Clients name whole keys; serving one namespace's keys is not supported (yet).
            Failure.say("serve does not take --namespace: it serves the cache's own keys")
            throw ExitCode.validationFailure
        }
        let maxBody = maxBody ?? CacheServer.Configuration.defaultMaxBodyBytes
        guard maxBody > 0 else {
            Failure.say("--max-body must be positive")
            throw ExitCode.validationFailure
        }
        guard maxConnections > 0 else { throw usage("--max-connections must be positive") }
        guard idleTimeout > 0, idleTimeout <= 86_400 else { throw usage("--idle-timeout must be more than 0 and at most 86400 seconds") }
        guard shutdownTimeout >= 0, shutdownTimeout <= 86_400 else { throw usage("--shutdown-timeout must be from 0 to 86400 seconds") }
        guard allowHost.allSatisfy({ !$0.isEmpty && !$0.contains(where: \.isWhitespace) }) else { throw usage("--allow-host takes a host name without spaces") }
        guard !allowUnauthenticatedReads || authFile != nil else { throw usage("--allow-unauthenticated-reads needs --auth-file") }
        guard (tlsCertificate == nil) == (tlsKey == nil) else { throw usage("--tls-certificate and --tls-key go together") }
        var credentials: Credentials?
        if let authFile {
            do { credentials = try Credentials(contentsOf: authFile) } catch {
                Failure.say("\(error)")
                throw ExitCode(Failure.keyProblem)
            }
        }
        var tls: TLSConfiguration?
        if let tlsCertificate, let tlsKey {
            do { tls = try CacheServer.tlsConfiguration(certificate: tlsCertificate, key: tlsKey) } catch {
                Failure.say("cannot use --tls-certificate \(tlsCertificate) and --tls-key \(tlsKey): \(error)")
                throw ExitCode(Failure.error)
            }
        }
        let scheme = tls == nil ? "http" : "https"
        let cache = try global.open(for: .filling)
        var configuration = CacheServer.Configuration(
            address: address, maxBodyBytes: maxBody, logger: CacheServer.standardErrorLogger(level: level),
            onListening: { bound in
                // Unbuffered: a script (or test) waiting for this line gets it at once. A closed or
                // full standard output is said once on standard error; the server goes on serving.
                _ = try? Streams.writeStandardOutput("blobcache serve: listening on \(scheme)://\(bound)\n")
            })
        configuration.maxConnections = maxConnections
        configuration.idleTimeout = .milliseconds(Int64((idleTimeout * 1000).rounded(.up)))
        configuration.shutdownTimeout = .milliseconds(Int64((shutdownTimeout * 1000).rounded(.up)))
        configuration.allowedHosts = allowHost
        configuration.credentials = credentials
        configuration.allowUnauthenticatedReads = allowUnauthenticatedReads
        configuration.tls = tls
        configuration.accessLog = accessLog
        let server = CacheServer(cache: cache, configuration: configuration)
        let failure = Self.wait { try await server.runUntilSignalled() }
        let closed = Result { try cache.close() }
        if let failure {
            Failure.say("\(failure)")
            throw ExitCode(Failure.error)
        }
        try Failure.running { try closed.get() }
    }

    private func usage(_ message: String) -> ExitCode {
        Failure.say(message)
        return ExitCode.validationFailure
    }

    /// Runs `body` to its end from this synchronous command (the tool's root command is not
    /// async), returning the error it threw.
    private static func wait(_ body: @escaping @Sendable () async throws -> Void) -> (any Error)? {
        final class Outcome: @unchecked Sendable {
            var error: (any Error)?  // written before the semaphore's signal, read after its wait
        }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        Task {
            do { try await body() } catch { outcome.error = error }
            done.signal()
        }
        done.wait()
        return outcome.error
    }
}
#endif
