import BlobCacheRemote
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real server (nginx, redis-server) run by a test on a free loopback port, stopped when the
/// test ends. `start()` returns once the port accepts connections.
final class LoopbackServer: @unchecked Sendable {
    let name: String
    let port: Int
    let folder: String
    private let launch: (Int, String) -> (executable: String, arguments: [String])
    private let environment: [String: String]
    private var process: Process?

    private init(name: String, environment: [String: String] = [:],
                 launch: @escaping (Int, String) -> (executable: String, arguments: [String])) throws {
        self.name = name
        self.port = try Self.freePort()
        self.folder = try Self.makeFolder(name)
        self.launch = launch
        self.environment = environment
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// nginx as a WebDAV-style PUT store rooted at `<folder>/root` (what ccache's HTTP storage
    /// and the remote tier's `HTTPRemoteStore` expect).
    static func nginx() throws -> LoopbackServer {
        try LoopbackServer(name: "nginx") { port, folder in
            let configuration = """
                daemon off;
                master_process off;
                worker_processes 1;
                pid \(folder)/nginx.pid;
                error_log \(folder)/error.log warn;
                events { worker_connections 256; }
                http {
                    access_log off;
                    client_body_temp_path \(folder)/body;
                    proxy_temp_path \(folder)/proxy;
                    fastcgi_temp_path \(folder)/fastcgi;
                    uwsgi_temp_path \(folder)/uwsgi;
                    scgi_temp_path \(folder)/scgi;
                    server {
                        listen 127.0.0.1:\(port);
                        root \(folder)/root;
                        client_max_body_size 0;
                        location / {
                            dav_methods PUT DELETE;
                            create_full_put_path on;
                            dav_access user:rw;
                        }
                    }
                }
                """
            try? FileManager.default.createDirectory(atPath: folder + "/root", withIntermediateDirectories: true)
            try? configuration.write(toFile: folder + "/nginx.conf", atomically: true, encoding: .utf8)
            return (Self.nginxPath!, ["-c", folder + "/nginx.conf", "-p", folder, "-e", folder + "/error.log"])
        }
    }

    /// redis-server with no persistence; `extra` are more of its command-line settings.
    static func redis(_ extra: [String] = []) throws -> LoopbackServer {
        try LoopbackServer(name: "redis") { port, folder in
            (Self.redisPath!, ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                               "--dir", folder, "--daemonize", "no", "--loglevel", "warning"] + extra)
        }
    }

    /// SeaweedFS (`weed mini`: master, volume, filer and S3 gateway in one process) on loopback
    /// with one S3 identity, `S3Server.accessKey`/`secretKey`; `port` is the S3 gateway's.
    /// Unsigned and wrongly signed requests are refused; a PUT creates its bucket.
    static func seaweed() throws -> LoopbackServer {
        // Every port explicit: mini's defaults (and gRPC ports at +10000) would collide, and
        // telemetry, WebDAV, Iceberg, Lance and the admin UI are not wanted on a test machine.
        let ports = try (0..<9).map { _ in try freePort(below: 55_000) }
        let environment = ["AWS_ACCESS_KEY_ID": S3Server.accessKey, "AWS_SECRET_ACCESS_KEY": S3Server.secretKey]
        let server = try LoopbackServer(name: "seaweedfs", environment: environment) { port, folder in
            (Self.weedPath!, ["mini", "-dir=\(folder)", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-master.telemetry=false",
                              "-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
                              "-s3.port=\(port)", "-s3.port.grpc=\(ports[0])", "-master.port=\(ports[1])",
                              "-master.port.grpc=\(ports[2])", "-volume.port=\(ports[3])", "-volume.port.grpc=\(ports[4])",
                              "-filer.port=\(ports[5])", "-filer.port.grpc=\(ports[6])", "-admin.port=\(ports[7])",
                              "-admin.port.grpc=\(ports[8])"])
        }
        // The S3 port accepts before the volume server has room on a loaded machine: the
        // server is ready once a signed PUT is stored (outside every prefix the tests use).
        let probe = try S3RemoteStore(bucket: "blobcache-test", prefix: "readiness", endpoint: "http://127.0.0.1:\(server.port)",
                                      credentials: S3Server.credentials, timeout: .seconds(5))
        let deadline = Date().addingTimeInterval(60)
        while (try? probe.put(.key("probe"), bytes: [1], expiresAt: nil)) == nil {
            guard Date() < deadline else { throw ServerError.didNotStart("seaweedfs", log: "no PUT stored within 60 s") }
            usleep(20_000) // polling a condition (a PUT stored), not standing in for one
        }
        try probe.delete(.key("probe"))
        return server
    }

    /// redis-server serving TLS only (no plain port) on `port`, with a certificate for the DNS
    /// name `localhost` (not for the address 127.0.0.1) signed by the CA in `caFile`; made with
    /// openssl in the server's folder on first start. `otherCAFile` is a CA that signed nothing here.
    /// With `certificates`, the files are taken from that folder instead (`makeCertificates`).
    static func redisTLS(_ extra: [String] = [], certificates: String? = nil) throws -> LoopbackServer {
        try LoopbackServer(name: "redis-tls") { port, folder in
            let files = certificates ?? folder
            if certificates == nil { makeCertificates(in: folder, names: "DNS:localhost") }
            return (Self.redisPath!, ["--port", "0", "--tls-port", "\(port)", "--bind", "127.0.0.1",
                                      "--tls-cert-file", files + "/server.pem", "--tls-key-file", files + "/server.key",
                                      "--tls-ca-cert-file", files + "/ca.pem", "--tls-auth-clients", "no",
                                      "--save", "", "--appendonly", "no", "--dir", folder, "--daemonize", "no", "--loglevel", "warning"] + extra)
        }
    }

    /// A redis-server in cluster mode, not yet part of a cluster (`LoopbackCluster` joins them);
    /// its cluster bus on another free port, since `port + 10000` may be past 65535. With
    /// `tlsCertificates`, clients and the cluster bus speak TLS only, with those files.
    static func redisClusterNode(tlsCertificates: String? = nil) throws -> LoopbackServer {
        let cluster = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
                       "--cluster-port", "\(try freePort())"]
        guard let tlsCertificates else { return try redis(cluster) }
        return try redisTLS(cluster + ["--tls-cluster", "yes"], certificates: tlsCertificates)
    }

    /// A CA (`ca.pem`), a server certificate for `names` (`server.pem`, `server.key`) and a CA
    /// that signed nothing (`other-ca.pem`), in `folder`, unless already there.
    static func makeCertificates(in folder: String, names: String) {
        guard !FileManager.default.fileExists(atPath: folder + "/server.pem"), let openssl = opensslPath else { return }
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try? "subjectAltName=\(names)\n".write(toFile: folder + "/san.cnf", atomically: true, encoding: .utf8)
        for ca in ["ca", "other-ca"] {
            _ = try? runProgram(openssl, ["req", "-x509"] + curve + ["-keyout", "\(folder)/\(ca).key", "-out", "\(folder)/\(ca).pem",
                                          "-days", "2", "-subj", "/CN=BlobCache test \(ca)"])
        }
        _ = try? runProgram(openssl, ["req"] + curve + ["-keyout", folder + "/server.key", "-out", folder + "/server.csr", "-subj", "/CN=localhost"])
        _ = try? runProgram(openssl, ["x509", "-req", "-in", folder + "/server.csr", "-CA", folder + "/ca.pem", "-CAkey", folder + "/ca.key",
                                      "-CAcreateserial", "-out", folder + "/server.pem", "-days", "2", "-extfile", folder + "/san.cnf"])
    }

    /// The test CA that signed a `redisTLS()` server's certificate.
    var caFile: String { folder + "/ca.pem" }
    /// A CA that signed nothing the server holds.
    var otherCAFile: String { folder + "/other-ca.pem" }

    static let nginxPath = installed("nginx", in: ["/usr/sbin", "/usr/bin"])
    static let weedPath = installed("weed", in: searchPath)
    static let awsPath = installed("aws", in: searchPath)
    static let curlPath = installed("curl", in: ["/usr/bin"])
    static var searchPath: [String] { (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) }
    static let redisPath = installed("redis-server", in: ["/usr/bin", "/usr/sbin"])
    static let redisCLIPath = installed("redis-cli", in: ["/usr/bin"])
    static let opensslPath = installed("openssl", in: ["/usr/bin"])

    /// Where the program is installed, if it is.
    static func installed(_ program: String, in folders: [String]) -> String? {
        folders.map { "\($0)/\(program)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The server's files root (nginx).
    var root: String { folder + "/root" }
    var httpURL: String { "http://127.0.0.1:\(port)" }

    /// Starts the server (again, after `stop()`) and waits until its port accepts connections.
    func start() throws {
        let (executable, arguments) = launch(port, folder)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(20)
        while !Self.accepts(port: port) {
            guard process.isRunning, Date() < deadline else {
                stop()
                throw ServerError.didNotStart(name, log: (try? String(contentsOfFile: folder + "/error.log", encoding: .utf8)) ?? "")
            }
            usleep(5_000) // polling a condition (the port accepting), not standing in for one
        }
    }

    /// Kills the server at once (SIGKILL) and waits for it to be gone.
    func stop() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    enum ServerError: Error { case didNotStart(String, log: String) }

    private static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// A port the kernel just handed out on loopback (bound to port 0, then released), below
    /// `limit` when one is given.
    private static func freePort(below limit: Int) throws -> Int {
        for _ in 0..<1000 {
            let port = try freePort()
            if port < limit { return port }
        }
        throw POSIXError(.EADDRNOTAVAIL)
    }

    /// A port the kernel just handed out on loopback (bound to port 0, then released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func makeFolder(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "blobcache-\(name)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// The S3 identity `LoopbackServer.seaweed()` knows, and what the tests sign with.
enum S3Server {
    static let accessKey = "AKIDBLOBCACHETEST"
    static let secretKey = "blobcache-test-secret-key"
    static let credentials = AWSCredentials(accessKeyID: accessKey, secretAccessKey: secretKey)
    /// The variables the CLI and awscli find these credentials in.
    static let environment = ["AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey, "AWS_DEFAULT_REGION": "us-east-1",
                              "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"]
}

/// A fresh temporary directory for a cache, removed at deinit.
final class Scratch {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "blobcache-remote-test-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func sub(_ name: String) -> String { path + "/" + name }
}

/// Runs a program and returns its exit status and standard output; `environment` adds to
/// this process's.
@discardableResult
func runProgram(_ executable: String, _ arguments: [String],
                environment: [String: String] = [:]) throws -> (status: Int32, output: String, error: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let errorData = LockedData()
    let group = DispatchGroup()
    DispatchQueue.global().async(group: group) { errorData.set(err.fileHandleForReading.readDataToEndOfFile()) }
    let output = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    group.wait()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: errorData.get(), as: UTF8.self))
}

/// Data filled by a reading thread.
final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ value: Data) { lock.withLock { data = value } }
    func get() -> Data { lock.withLock { data } }
}

/// The built `blobcache` executable.
var blobcacheTool: String {
    URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        .deletingLastPathComponent().appendingPathComponent("blobcache").path
}
