import BlobCache
import Crypto
import Foundation
import Testing

/// `blobcache serve` driven by real `curl` processes on loopback.
@Suite(.serialized)
struct ServeHTTPTests {
    static let curlInstalled = Run.installed("curl")

    private func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    private func sha256Hex(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    @Test("8 curl processes PUT then GET random bodies at once; HEAD; DELETE then 404",
          .enabled(if: curlInstalled, "curl is not installed"))
    func concurrentClients() throws {
        let scratch = try ScratchDirectory("concurrent")
        let directory = scratch.path
        let server = try ServerProcess(directory: directory)
        let transfers = try ScratchDirectory("concurrent-bodies")  // curl's files, beside the cache
        let sizes = [0, 2 << 20, 1] + (0..<5).map { _ in Int.random(in: 0...(2 << 20)) }
        let bodies = sizes.map(randomBytes)
        var running: [(Process, Pipe)] = []
        for (index, body) in bodies.enumerated() {
            let upload = "\(transfers.path)/up\(index)", download = "\(transfers.path)/down\(index)"
            _ = FileManager.default.createFile(atPath: upload, contents: Data(body))
            let url = "\(server.url)/ab/concurrent-\(index)"
            // -T sends PUT (with Expect: 100-continue over 1 MiB); --next then GETs it back.
            running.append(try Run.start("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}\n", "-T", upload, url,
                                                  "--next", "-sS", "-o", download, "-w", "%{http_code}\n", url]))
        }
        for (index, (process, out)) in running.enumerated() {
            let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "curl \(index): \(output)")
            #expect(output == "201\n200\n", "curl \(index)")
            let got = FileManager.default.contents(atPath: "\(transfers.path)/down\(index)").map { [UInt8]($0) }
            #expect(got == bodies[index], "body \(index) (\(sizes[index]) bytes) came back different")
        }

        let head = try Curl.request("HEAD", "\(server.url)/ab/concurrent-1")
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == String(2 << 20))
        // HEAD then GET on one connection: a body after the HEAD's head would break the GET.
        let reuse = try Run.run("curl", ["-sS", "-I", "-o", "/dev/null", "-w", "%{http_code}\n", "\(server.url)/ab/concurrent-2",
                                         "--next", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n",
                                         "\(server.url)/ab/concurrent-2"])
        #expect(reuse.output == "200\n200 0\n")
        #expect(try Curl.request("HEAD", "\(server.url)/missing").status == 404)

        let get = try Curl.request("GET", "\(server.url)/ab/concurrent-2")
        #expect(get.header("Content-Type") == "application/octet-stream")
        #expect(get.header("Content-Length") == "1")

        #expect(try Curl.request("PUT", "\(server.url)/ab/concurrent-2", body: [7]).status == 204)  // replaced
        #expect(try Curl.request("DELETE", "\(server.url)/ab/concurrent-0").status == 204)
        #expect(try Curl.request("GET", "\(server.url)/ab/concurrent-0").status == 404)
        #expect(try Curl.request("DELETE", "\(server.url)/ab/concurrent-0").status == 404)

        let empty = try Curl.request("PUT", "\(server.url)/", body: [1])
        #expect(empty.status == 400)
        #expect(String(decoding: empty.body, as: UTF8.self).split(separator: "\n").count == 1)
        #expect(try Curl.request("PUT", "\(server.url)/%00raw", body: [1]).status == 400)
        #expect(try Curl.request("POST", "\(server.url)/k", body: [1]).status == 405)
        #expect(server.terminate() == 0, "\(server.log)")
    }

    @Test("Bazel: /cas/ PUTs are checked against the body's SHA-256; /ac/ is stored as it comes",
          .enabled(if: curlInstalled, "curl is not installed"))
    func bazelPaths() throws {
        let scratch = try ScratchDirectory("bazel")
        let server = try ServerProcess(directory: scratch.path)
        let blob = randomBytes(10_000)
        let digest = sha256Hex(blob)
        let put = try Curl.request("PUT", "\(server.url)/cas/\(digest)", body: blob)
        #expect((200..<300).contains(put.status))
        #expect(try Curl.request("GET", "\(server.url)/cas/\(digest)").body == blob)

        let other = randomBytes(100)
        let wrong = sha256Hex(other)
        let mismatch = try Curl.request("PUT", "\(server.url)/cas/\(wrong)", body: blob)
        #expect(mismatch.status == 400)
        #expect(try Curl.request("GET", "\(server.url)/cas/\(wrong)").status == 404)
        #expect(try Curl.request("PUT", "\(server.url)/cas/\(digest.uppercased())", body: blob).status == 400)
        #expect(try Curl.request("PUT", "\(server.url)/cas/abc", body: blob).status == 400)
        // Under a path prefix (--remote_cache=http://host:port/project) the check applies too.
        #expect(try Curl.request("PUT", "\(server.url)/project/cas/\(wrong)", body: blob).status == 400)

        let action = randomBytes(300)
        let actionKey = sha256Hex(randomBytes(8))
        #expect((200..<300).contains(try Curl.request("PUT", "\(server.url)/ac/\(actionKey)", body: action).status))
        #expect(try Curl.request("GET", "\(server.url)/ac/\(actionKey)").body == action)
        #expect(server.terminate() == 0, "\(server.log)")
    }

    @Test("A body over --max-body gets 413 and nothing is stored",
          .enabled(if: curlInstalled, "curl is not installed"))
    func oversizedBody() throws {
        let scratch = try ScratchDirectory("maxbody")
        let server = try ServerProcess(directory: scratch.path, extra: ["--max-body", "1Ki"])
        let tooLarge = try Curl.request("PUT", "\(server.url)/big", body: randomBytes(4096))
        #expect(tooLarge.status == 413)
        #expect(try Curl.request("GET", "\(server.url)/big").status == 404)
        // Without a Content-Length (chunked), refused while reading.
        let chunked = try Curl.request("PUT", "\(server.url)/chunked", body: randomBytes(4096),
                                       extra: ["-H", "Transfer-Encoding: chunked"])
        #expect(chunked.status == 413)
        #expect(try Curl.request("GET", "\(server.url)/chunked").status == 404)
        #expect(try Curl.request("PUT", "\(server.url)/fits", body: randomBytes(1024)).status == 201)
        #expect(server.terminate() == 0, "\(server.log)")
    }

    @Test("GET /status returns the cache's figures as JSON; other methods on it get 405; debug logs each request",
          .enabled(if: curlInstalled, "curl is not installed"))
    func status() throws {
        let scratch = try ScratchDirectory("status")
        let server = try ServerProcess(directory: scratch.path, extra: ["--log-level", "debug"])
        for key in ["a", "b", "c"] {
            #expect(try Curl.request("PUT", "\(server.url)/\(key)", body: Array(key.utf8)).status == 201)
        }
        #expect(try Curl.request("GET", "\(server.url)/a").status == 200)
        #expect(try Curl.request("GET", "\(server.url)/b").status == 200)
        #expect(try Curl.request("GET", "\(server.url)/nope").status == 404)
        let status = try Curl.request("GET", "\(server.url)/status")
        #expect(status.status == 200)
        #expect(status.header("Content-Type") == "application/json")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(status.body)) as? [String: Any])
        #expect(json["entries"] as? Int == 3)
        #expect(json["logicalBytes"] as? Int == 3)
        let sinceOpen = try #require(json["sinceOpen"] as? [String: Any])
        #expect(sinceOpen["sets"] as? Int == 3)
        #expect(sinceOpen["hits"] as? Int == 2)
        #expect(sinceOpen["misses"] as? Int == 1)
        let limits = try #require(json["limits"] as? [String: Any])
        #expect(limits.keys.sorted() == ["maxEntries", "maxSize"])
        let figures = try #require(json["server"] as? [String: Any])
        #expect(figures["requests"] as? Int == 7)
        #expect(try Curl.request("PUT", "\(server.url)/status", body: [1]).status == 405)
        #expect(try Curl.request("DELETE", "\(server.url)/status").status == 405)
        #expect(server.terminate() == 0)
        #expect(server.log.contains("GET /nope 404 "), "\(server.log)")
        #expect(server.log.contains("PUT /a 201 1 bytes"), "\(server.log)")
    }

    @Test("SIGTERM: the server exits 0 and the directory opens again with the values in it",
          .enabled(if: curlInstalled, "curl is not installed"))
    func sigterm() throws {
        let scratch = try ScratchDirectory("sigterm")
        let directory = scratch.path
        let server = try ServerProcess(directory: directory)
        let values = (0..<5).map { _ in randomBytes(Int.random(in: 0...100_000)) }
        for (index, value) in values.enumerated() {
            #expect(try Curl.request("PUT", "\(server.url)/kept/\(index)", body: value).status == 201)
        }
        #expect(server.terminate() == 0, "\(server.log)")
        let cache = try BlobCache(directory: directory)
        for (index, value) in values.enumerated() {
            #expect(try cache.bytes(forKey: "kept/\(index)") == value)
        }
        try cache.close()
    }
}

/// The command line: a bad --listen is a usage error, a taken port an error.
@Suite struct ServeCommandLineTests {
    @Test func badListenIsUsage() throws {
        let scratch = try ScratchDirectory("badlisten")
        let directory = scratch.path
        let blobcache = ServerProcess.productsDirectory.appendingPathComponent("blobcache").path
        for bad in ["nonsense", "127.0.0.1:99999", ":80", "::1:80"] {
            let result = try Run.run(blobcache, ["serve", "--dir", directory, "--listen", bad])
            #expect(result.status == 64, "\(bad): \(result.output)")
            #expect(result.output.split(separator: "\n").count == 1, "\(bad): \(result.output)")
        }
        let level = try Run.run(blobcache, ["serve", "--dir", directory, "--log-level", "loud"])
        #expect(level.status == 64, "\(level.output)")
    }

    @Test func portInUse() throws {
        let scratch = try ScratchDirectory("port-a")
        let first = try ServerProcess(directory: scratch.path)
        let blobcache = ServerProcess.productsDirectory.appendingPathComponent("blobcache").path
        let other = try ScratchDirectory("port-b")
        let result = try Run.run(blobcache, ["serve", "--dir", other.path,
                                             "--listen", "127.0.0.1:\(first.port)"])
        #expect(result.status == 2, "\(result.output)")
        #expect(result.output.split(separator: "\n").count == 1, "\(result.output)")
        #expect(result.output.contains("in use"), "\(result.output)")
        #expect(first.terminate() == 0)
    }
}

/// The server tests' own scaffolding: a test leaves nothing behind in the temporary directory.
@Suite struct ServerScaffoldingTests {
    @Test("a served scratch directory and the server's log are gone once the test lets go of them")
    func leavesNothingBehind() throws {
        var left: [String] = []
        do {
            let scratch = try ScratchDirectory("cleanup")
            let server = try ServerProcess(directory: scratch.path)
            left = [scratch.path, server.logFile]
            for path in left { #expect(FileManager.default.fileExists(atPath: path), "\(path)") }
            #expect(server.terminate() == 0, "\(server.log)")
        }
        for path in left { #expect(!FileManager.default.fileExists(atPath: path), "\(path) was left behind") }
    }
}
