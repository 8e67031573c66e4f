#if BLOBCACHE_NETWORK
import ArgumentParser
import BlobCache
import BlobCacheServer
import Dispatch
import Foundation

/// `blobcache serve`: the cache directory as an HTTP cache server.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the cache over HTTP to ccache, sccache (WebDAV) and Bazel's HTTP remote cache.",
        discussion: """
            The request path without its leading '/' is the key: GET (200 or 404), HEAD, PUT (201 new, \
            204 replaced) and DELETE (204 or 404). Bazel's /cas/<sha256> PUTs are checked against the \
            body's SHA-256 (400 on a mismatch); /ac/ entries are stored as they come. GET /status returns \
            the cache's figures as JSON. Bodies over --max-body get 413.

            ccache:  remote_storage = http://127.0.0.1:8080/   (or CCACHE_REMOTE_STORAGE)
            sccache: SCCACHE_WEBDAV_ENDPOINT=http://127.0.0.1:8080/
            Bazel:   --remote_cache=http://127.0.0.1:8080

            There is no authentication and no TLS: anyone who can reach the address can read and \
            replace entries. The default address is loopback; listen on another interface only on a \
            trusted network.

            Once listening, prints 'blobcache serve: listening on http://HOST:PORT' (the real port, so \
            --listen 127.0.0.1:0 works). SIGTERM or SIGINT finishes the requests in flight, closes the \
            cache and exits 0. The options of this command go after 'serve' (the global ones anywhere). \
            Exit codes: 0 stopped by a signal; 2 the port is in use or another error; 8 the cache cannot \
            be opened; 64 usage (a bad --listen, --max-body or --log-level).
            """)

    @Option(help: ArgumentHelp(
        "Address to listen on; the default is loopback only, since the server has no authentication. Port 0 picks a free port.",
        valueName: "HOST:PORT"))
    var listen = ListenAddress.default.description

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
        let cache = try global.open(for: .filling)
        let configuration = CacheServer.Configuration(
            address: address, maxBodyBytes: maxBody, logger: CacheServer.standardErrorLogger(level: level),
            onListening: { bound in
                // Unbuffered: a script (or test) waiting for this line gets it at once. A closed or
                // full standard output is said once on standard error; the server goes on serving.
                _ = try? Streams.writeStandardOutput("blobcache serve: listening on http://\(bound)\n")
            })
        let server = CacheServer(cache: cache, configuration: configuration)
        let failure = Self.wait { try await server.runUntilSignalled() }
        let closed = Result { try cache.close() }
        if let failure {
            Failure.say("\(failure)")
            throw ExitCode(Failure.error)
        }
        try Failure.running { try closed.get() }
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
