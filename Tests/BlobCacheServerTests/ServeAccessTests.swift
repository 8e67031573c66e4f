import Foundation
import Testing

/// Who may reach `serve`: the Host check against DNS rebinding, credentials from
/// `--auth-file`, and TLS.
@Suite(.serialized)
struct ServeAccessTests {
    /// Runs `blobcache ARGUMENTS` with `input` on standard input: exit status and standard output.
    static func blobcache(_ arguments: [String], input: String) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = ServerProcess.productsDirectory.appendingPathComponent("blobcache")
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    static let token = "t0k3n-5f1e2d3c4b5a69788796a5b4"

    /// `blobcache serve --auth-file PATH`, which should refuse to start; `timeout` ends it
    /// (exit 124) if it serves after all, so the test fails instead of waiting for ever.
    static func refusedServe(directory: String, authFile: String) throws -> (status: Int32, output: String) {
        let blobcache = ServerProcess.productsDirectory.appendingPathComponent("blobcache").path
        return try Run.run("timeout", ["20", blobcache, "serve", "--dir", directory, "--listen", "127.0.0.1:0", "--auth-file", authFile])
    }

    /// An auth file with alice (read-write), bob (read only) and a read-write token; mode 0600.
    static func authFile(in folder: String) throws -> String {
        var lines = ""
        for (arguments, secret) in [(["basic", "alice", "--access", "read-write"], "alice-pass"),
                                    (["basic", "bob", "--access", "read"], "bob-pass"),
                                    (["bearer", "ci", "--access", "read-write"], token)] {
            let made = try blobcache(["credential"] + arguments, input: secret + "\n")
            guard made.status == 0 else { throw Failure("blobcache credential \(arguments) exited \(made.status)") }
            lines += made.output
        }
        let path = folder + "/credentials"
        _ = FileManager.default.createFile(atPath: path, contents: Data(lines.utf8), attributes: [.posixPermissions: 0o600])
        return path
    }

    @Test("on loopback, a request whose Host is not a loopback name gets 421; --allow-host admits a name")
    func hostCheck() throws {
        let scratch = try ScratchDirectory("host")
        let server = try ServerProcess(directory: scratch.path + "/cache", extra: ["--allow-host", "cache.internal"])
        let evil = try Curl.request("PUT", "\(server.url)/ac/x", body: Array("planted".utf8), extra: ["-H", "Host: evil.example"])
        #expect(evil.status == 421)
        #expect(try Curl.request("GET", "\(server.url)/ac/x").status == 404, "the refused PUT stored nothing")
        let probe = try Curl.request("GET", "\(server.url)/healthz", extra: ["-H", "Host: 10.1.2.3:8080"])
        #expect(probe.status == 200, "a probe by address reaches /healthz")
        for host in ["localhost:8080", "127.0.0.1", "[::1]:80", "cache.internal:8080", "localhost.", "cache.internal.:80"] {
            let put = try Curl.request("PUT", "\(server.url)/ac/\(host.count)", body: [1], extra: ["-H", "Host: \(host)"])
            #expect(put.status == 201, "Host: \(host)")
        }
        #expect(server.terminate() == 0, "\(server.log)")
    }

    @Test("with --auth-file: no credentials 401 (with WWW-Authenticate), wrong 401, read-only PUT 403, read-write and token work")
    func authentication() throws {
        let scratch = try ScratchDirectory("auth")
        let server = try ServerProcess(directory: scratch.path + "/cache", extra: ["--auth-file", try Self.authFile(in: scratch.path)])
        let url = "\(server.url)/k"
        let anonymous = try Curl.request("PUT", url, body: [1])
        #expect(anonymous.status == 401)
        #expect(anonymous.headers.lowercased().contains("www-authenticate: basic realm=\"blobcache\""), "\(anonymous.headers)")
        #expect(try Curl.request("GET", url).status == 401)
        #expect(try Curl.request("GET", url, extra: ["-u", "alice:wrong"]).status == 401)
        #expect(try Curl.request("GET", url, extra: ["-u", "mallory:alice-pass"]).status == 401)
        #expect(try Curl.request("GET", url, extra: ["-H", "Authorization: Bearer not-the-token-at-all-0000000"]).status == 401)
        #expect(try Curl.request("PUT", url, body: [2], extra: ["-u", "bob:bob-pass"]).status == 403)
        #expect(try Curl.request("PUT", url, body: [3], extra: ["-u", "alice:alice-pass"]).status == 201)
        #expect(try Curl.request("GET", url, extra: ["-u", "bob:bob-pass"]).body == [3])
        #expect(try Curl.request("PUT", url, body: [4], extra: ["-H", "Authorization: Bearer \(Self.token)"]).status == 204)
        #expect(try Curl.request("GET", url, extra: ["-u", "alice:alice-pass"]).body == [4], "the 403 PUT stored nothing")
        #expect(try Curl.request("GET", "\(server.url)/healthz").status == 200, "/healthz needs no credentials")
        #expect(try Curl.request("GET", "\(server.url)/metrics").status == 401)
        #expect(server.terminate() == 0, "\(server.log)")
    }

    @Test("--allow-unauthenticated-reads: reads without credentials, writes still need one")
    func unauthenticatedReads() throws {
        let scratch = try ScratchDirectory("anonymous-reads")
        let server = try ServerProcess(directory: scratch.path + "/cache",
                                       extra: ["--auth-file", try Self.authFile(in: scratch.path), "--allow-unauthenticated-reads"])
        #expect(try Curl.request("PUT", "\(server.url)/k", body: [1], extra: ["-u", "alice:alice-pass"]).status == 201)
        #expect(try Curl.request("GET", "\(server.url)/k").body == [1])
        #expect(try Curl.request("PUT", "\(server.url)/k", body: [2]).status == 401)
        #expect(try Curl.request("DELETE", "\(server.url)/k").status == 401)
        #expect(try Curl.request("GET", "\(server.url)/k", extra: ["-u", "alice:wrong"]).status == 401, "wrong credentials are not anonymous")
        #expect(server.terminate() == 0, "\(server.log)")
    }

    @Test("an auth file its group or others may read is refused: exit 9, nothing served")
    func openAuthFileRefused() throws {
        let scratch = try ScratchDirectory("auth-open")
        let path = try Self.authFile(in: scratch.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        let result = try Self.refusedServe(directory: scratch.path + "/cache", authFile: path)
        #expect(result.status == 9, "\(result.output)")
        #expect(!result.output.contains("listening"))
    }

    @Test("an auth file naming a user twice is refused (exit 9): appending a new password must not leave the old one in force")
    func duplicateUserRefused() throws {
        let scratch = try ScratchDirectory("auth-duplicate")
        let path = try Self.authFile(in: scratch.path)
        let again = try Self.blobcache(["credential", "basic", "alice", "--access", "read"], input: "new-pass\n")
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(again.output.utf8))
        try handle.close()
        let result = try Self.refusedServe(directory: scratch.path + "/cache", authFile: path)
        #expect(result.status == 9, "\(result.output)")
    }

    @Test("credential: a short token and an empty secret are refused (exit 2), a bad scheme is usage (64)")
    func credentialRefusals() throws {
        #expect(try Self.blobcache(["credential", "bearer", "ci"], input: "short\n").status == 2)
        #expect(try Self.blobcache(["credential", "basic", "alice"], input: "").status == 2)
        #expect(try Self.blobcache(["credential", "digest", "alice"], input: "x\n").status == 64)
        #expect(try Self.blobcache(["credential", "basic", "al:ice"], input: "x\n").status == 2)
    }

    @Test("--tls-certificate and --tls-key: curl with the test CA gets the value over https",
          .enabled(if: Run.installed("openssl"), "openssl is not installed"))
    func tls() throws {
        let scratch = try ScratchDirectory("tls")
        let folder = scratch.path
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: folder + "/san.ext", atomically: true, encoding: .utf8)
        for step in [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", folder + "/ca.key",
             "-out", folder + "/ca.pem", "-days", "1", "-subj", "/CN=blobcache test CA"],
            ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", folder + "/key.pem",
             "-out", folder + "/server.csr", "-subj", "/CN=localhost"],
            ["x509", "-req", "-in", folder + "/server.csr", "-CA", folder + "/ca.pem", "-CAkey", folder + "/ca.key", "-CAcreateserial",
             "-out", folder + "/cert.pem", "-days", "1", "-extfile", folder + "/san.ext"],
        ] {
            let made = try Run.run("openssl", step)
            #expect(made.status == 0, "openssl \(step.joined(separator: " ")): \(made.output)")
        }
        let server = try ServerProcess(directory: folder + "/cache",
                                       extra: ["--tls-certificate", folder + "/cert.pem", "--tls-key", folder + "/key.pem"])
        #expect(server.url.hasPrefix("https://"))
        let trust = ["--cacert", folder + "/ca.pem"]
        #expect(try Curl.request("PUT", "\(server.url)/k", body: Array("secret".utf8), extra: trust).status == 201)
        #expect(try Curl.request("GET", "\(server.url)/k", extra: trust).body == Array("secret".utf8))
        let untrusted = try Run.run("curl", ["-sS", "-o", "/dev/null", "\(server.url)/k"])
        #expect(untrusted.status != 0, "curl without the CA must refuse the certificate")
        let plain = try Run.run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(server.port)/k"])
        #expect(plain.output != "200", "plain HTTP on the TLS port must not be served")
        #expect(server.terminate() == 0, "\(server.log)")
    }
}
