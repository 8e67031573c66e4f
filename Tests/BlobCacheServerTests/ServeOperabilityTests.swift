import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What an operator runs `serve` with: `/metrics` (read by Prometheus' own parser), `/healthz`,
/// 507 on a full disk, every key reachable past the server's routes, and the access log.
@Suite(.serialized)
struct ServeOperabilityTests {
    static let haveParser = (try? Run.run("python3", ["-c", "import prometheus_client.parser"]).status) == 0
    static let canMount = getuid() == 0 && Run.installed("mount")

    /// `/metrics` parsed by prometheus_client: sample name and labels to value.
    static func scrape(_ server: ServerProcess) throws -> [String: Double] {
        let text = try Curl.request("GET", "\(server.url)/metrics")
        #expect(text.status == 200)
        #expect(text.headers.contains("text/plain; version=0.0.4"))
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            samples = {}
            for family in text_string_to_metric_families(sys.stdin.read()):
                for sample in family.samples:
                    labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                    samples[sample.name + ("{" + labels + "}" if labels else "")] = sample.value
            print(json.dumps(samples))
            """
        let folder = try ScratchDirectory("scrape")
        _ = FileManager.default.createFile(atPath: folder.path + "/metrics", contents: Data(text.body))
        let parsed = try Run.run("sh", ["-c", "python3 -c '\(script)' < '\(folder.path)/metrics'"])
        guard parsed.status == 0, let json = try JSONSerialization.jsonObject(with: Data(parsed.output.utf8)) as? [String: Double] else {
            throw Failure("prometheus_client could not parse /metrics: \(parsed.output)")
        }
        return json
    }

    @Test("/metrics parses as Prometheus text, and its counters move with requests",
          .enabled(if: haveParser, "python3's prometheus_client is not installed (pip install prometheus_client)"))
    func metrics() throws {
        let scratch = try ScratchDirectory("metrics")
        let server = try ServerProcess(directory: scratch.path + "/cache")
        let before = try Self.scrape(server)
        #expect(try Curl.request("PUT", "\(server.url)/k", body: Array(repeating: 7, count: 1000)).status == 201)
        #expect(try Curl.request("GET", "\(server.url)/k").status == 200)
        #expect(try Curl.request("GET", "\(server.url)/absent").status == 404)
        let after = try Self.scrape(server)
        #expect(after["blobcache_hits_total"] == (before["blobcache_hits_total"] ?? 0) + 1, "\(after)")
        #expect(after["blobcache_misses_total"] == (before["blobcache_misses_total"] ?? 0) + 1)
        #expect(after["blobcache_http_requests_total{method=PUT,status=201}"] == 1)
        #expect(after["blobcache_http_received_bytes_total"] == (before["blobcache_http_received_bytes_total"] ?? 0) + 1000)
        #expect((after["blobcache_http_sent_bytes_total"] ?? 0) >= (before["blobcache_http_sent_bytes_total"] ?? 0) + 1000)
        #expect(after["blobcache_entries"] == 1)
        #expect((after["blobcache_stored_bytes"] ?? 0) > 0)
        #expect(after["blobcache_evictions_total"] == 0)
        #expect((after["blobcache_http_request_duration_seconds_count"] ?? 0) >= 4)
        #expect((after["blobcache_http_open_connections"] ?? 0) >= 1, "the scrape's own connection is open")
        #expect(server.terminate() == 0, "\(server.log)")
    }

    @Test("the server's routes do not hide keys: /_/status is the key 'status', /_/_/x the key '_/x'; PROPFIND / is a collection")
    func routesLeaveKeysReachable() throws {
        let scratch = try ScratchDirectory("routes")
        let server = try ServerProcess(directory: scratch.path + "/cache")
        for (path, key) in [("/_/status", "status"), ("/_/metrics", "metrics"), ("/_/healthz", "healthz"), ("/_/_/x", "_/x")] {
            #expect(try Curl.request("PUT", server.url + path, body: Array(key.utf8)).status == 201, "\(path)")
            #expect(try Curl.request("GET", server.url + path).body == Array(key.utf8), "\(path)")
        }
        let listed = try Run.run(ServerProcess.productsDirectory.appendingPathComponent("blobcache").path,
                                 ["ls", "--dir", scratch.path + "/cache"])
        #expect(Set(listed.output.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") })
                    .isSuperset(of: ["status", "metrics", "healthz", "_/x"]), "\(listed.output)")
        #expect(try Curl.request("GET", "\(server.url)/status").body.first == UInt8(ascii: "{"), "/status is still the figures")
        let propfind = try Curl.request("PROPFIND", "\(server.url)/", extra: ["-H", "Depth: 0"])
        #expect(propfind.status == 207)
        #expect(server.terminate() == 0, "\(server.log)")
    }

    @Test("--access-log: one info line per request naming the client, the credential, the method, the path and the status")
    func accessLog() throws {
        let scratch = try ScratchDirectory("access-log")
        let server = try ServerProcess(directory: scratch.path + "/cache",
                                       extra: ["--access-log", "--auth-file", try ServeAccessTests.authFile(in: scratch.path)])
        _ = try Curl.request("PUT", "\(server.url)/logged", body: [1, 2, 3], extra: ["-u", "alice:alice-pass"])
        #expect(server.terminate() == 0)
        #expect(server.log.contains("info blobcache.serve: [BlobCacheServer] 127.0.0.1 alice PUT /logged 201 3 bytes"), "\(server.log)")
        #expect(!server.log.contains("alice-pass"))
    }

    /// A tmpfs of `size` at a new folder, unmounted when the folder goes.
    final class Tmpfs {
        let path: String
        init(size: String) throws {
            path = NSTemporaryDirectory() + "blobcache-tmpfs-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let mounted = try Run.run("mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path])
            guard mounted.status == 0 else { throw Failure("mount: \(mounted.output)") }
        }
        deinit {
            _ = try? Run.run("umount", ["-l", path])
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    @Test("a full disk answers 507 and stores nothing; /healthz is 503 on a full disk and on a read-only file system",
          .enabled(if: canMount, "needs root to mount a tmpfs"))
    func fullAndReadOnlyDisk() throws {
        let disk = try Tmpfs(size: "3m")
        let server = try ServerProcess(directory: disk.path + "/cache")
        #expect(try Curl.request("GET", "\(server.url)/healthz").status == 200)
        var statuses: [Int] = []
        var seed: UInt64 = 1
        for index in 0..<6 {
            let value = (0..<(700 << 10)).map { _ -> UInt8 in
                seed = seed &* 6364136223846793005 &+ 1442695040888963407
                return UInt8(truncatingIfNeeded: seed >> 33)
            }
            statuses.append(try Curl.request("PUT", "\(server.url)/k\(index)", body: value).status)
        }
        #expect(statuses.contains(507), "\(statuses)")
        #expect(!statuses.contains(500), "\(statuses)")
        let refused = statuses.firstIndex(of: 507) ?? 0
        #expect(try Curl.request("GET", "\(server.url)/k\(refused)").status == 404, "a refused PUT stored nothing")
        #expect(try Curl.request("GET", "\(server.url)/k0").status == 200, "what was stored before is still there")
        let failed = try Curl.request("PUT", "\(server.url)/k\(refused)", body: Array(repeating: 9, count: 4 << 20))
        #expect(!String(decoding: failed.body, as: UTF8.self).contains(disk.path), "no path of this machine in a reply")

        // Full to the last block: not writable.
        _ = try Run.run("dd", ["if=/dev/zero", "of=\(disk.path)/filler", "bs=64k"])
        let full = try Curl.request("GET", "\(server.url)/healthz")
        #expect(full.status == 503, "\(String(decoding: full.body, as: UTF8.self))")
        try FileManager.default.removeItem(atPath: disk.path + "/filler")
        #expect(try Curl.request("GET", "\(server.url)/healthz").status == 200)

        // A file system mounted read-only over the directory (as one remounted read-only after
        // errors would be; a tmpfs with files open for writing cannot be remounted).
        let mounted = try Run.run("mount", ["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", disk.path + "/cache"])
        #expect(mounted.status == 0, "\(mounted.output)")
        let readOnly = try Curl.request("GET", "\(server.url)/healthz")
        #expect(readOnly.status == 503, "\(String(decoding: readOnly.body, as: UTF8.self))")
        _ = try Run.run("umount", [disk.path + "/cache"])
        #expect(try Curl.request("GET", "\(server.url)/healthz").status == 200)
        #expect(server.terminate() == 0, "\(server.log)")
    }
}
