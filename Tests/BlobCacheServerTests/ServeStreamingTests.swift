import BlobCache
import Crypto
import Foundation
import Testing

/// `serve` streams: PUT bodies go to staging files as they arrive, GET replies come from the
/// blob a checked piece at a time, and a reply that cannot be completed with the right bytes is
/// cut off (the connection closed before `Content-Length` bytes), never completed wrongly.
@Suite(.serialized)
struct ServeStreamingTests {
    static let curlInstalled = Run.installed("curl")

    private func looseFile(_ root: String, _ bytes: [UInt8]) -> String {
        let hex = BlobID(hashing: bytes).hex
        return "\(root)/objects/\(hex.prefix(1))/\(hex.dropFirst().prefix(1))/\(hex)"
    }

    private func write(_ bytes: [UInt8], to path: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    }

    /// Random bytes from a seed (SplitMix64).
    private func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return UInt8(truncatingIfNeeded: z ^ (z >> 31))
        }
    }

    /// `curl` fetching `url` into `output`: its exit status (18: the body ended short), the
    /// bytes it received and the Content-Length it was promised.
    private func fetch(_ url: String, into output: String) throws -> (curl: Int32, received: Int, promised: Int?) {
        let result = try Run.run("curl", ["-sS", "-o", output, "-D", output + ".head", url])
        let received = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? Int) ?? 0
        let head = (try? String(contentsOfFile: output + ".head", encoding: .utf8)) ?? ""
        let promised = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }
        return (result.status, received, promised)
    }

    @Test("a large PUT is stored in pieces as it arrives and a GET sends it back whole",
          .enabled(if: curlInstalled, "curl is not installed"))
    func largeRoundTrip() throws {
        let scratch = try ScratchDirectory("stream-round-trip")
        let server = try ServerProcess(directory: scratch.path + "/cache")
        let value = random(9_000_000, seed: 1)
        write(value, to: scratch.path + "/upload")
        let put = try Run.run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-T", scratch.path + "/upload",
                                       server.url + "/big"])
        #expect(put.output == "201")
        let stored = FileManager.default.contents(atPath: looseFile(scratch.path + "/cache", value)).map { [UInt8]($0) } ?? []
        #expect(stored.count > 4 && stored[4] == 4, "a pieced blob (format 4)")
        let got = try fetch(server.url + "/big", into: scratch.path + "/got")
        #expect(got.curl == 0 && got.promised == value.count)
        #expect(FileManager.default.contents(atPath: scratch.path + "/got").map { [UInt8]($0) } == value)
    }

    @Test("damage found part way closes the connection before Content-Length bytes; the next GET is a miss",
          .enabled(if: curlInstalled, "curl is not installed"), arguments: [0.5, 0.75, 0.99])
    func damageCutsTheReply(at fraction: Double) throws {
        let scratch = try ScratchDirectory("stream-damage")
        let value = random(8_000_000, seed: 2)
        let cache = try BlobCache(directory: scratch.path + "/cache")
        let source = scratch.path + "/source"
        write(value, to: source)
        let fd = open(source, O_RDONLY)
        defer { close(fd) }
        try cache.set(contentsOf: .init(rawValue: fd), forKey: "big")
        try cache.close()
        let file = looseFile(scratch.path + "/cache", value)
        var stored = [UInt8](FileManager.default.contents(atPath: file)!)
        stored[Int(Double(stored.count) * fraction)] ^= 0xFF
        write(stored, to: file)
        let server = try ServerProcess(directory: scratch.path + "/cache")
        let got = try fetch(server.url + "/big", into: scratch.path + "/got")
        #expect(got.promised == value.count)
        #expect(got.curl != 0, "curl saw the body end short")
        #expect(got.received < value.count)
        let received = FileManager.default.contents(atPath: scratch.path + "/got").map { [UInt8]($0) } ?? []
        #expect(received == Array(value.prefix(received.count)), "every byte sent was the value's")
        #expect(try Curl.request("GET", server.url + "/big").status == 404)
    }

    @Test("a large /cas/ value whose SHA-256 is not its name is cut off before its last byte",
          .enabled(if: curlInstalled, "curl is not installed"))
    func casDigestChecked() throws {
        let scratch = try ScratchDirectory("stream-cas")
        let value = random(3_000_000, seed: 3)
        let name = SHA256.hash(data: random(10, seed: 4)).map { String(format: "%02x", $0) }.joined()
        let cache = try BlobCache(directory: scratch.path + "/cache")
        let source = scratch.path + "/source"
        write(value, to: source)
        let fd = open(source, O_RDONLY)
        try cache.set(contentsOf: .init(rawValue: fd), forKey: "cas/" + name)
        close(fd)
        // The same bytes set whole, under another wrong name: read and checked whole, a clean 404.
        let wholeName = SHA256.hash(data: random(10, seed: 7)).map { String(format: "%02x", $0) }.joined()
        try cache.set(value + [1], forKey: "cas/" + wholeName)
        try cache.close()
        let server = try ServerProcess(directory: scratch.path + "/cache")
        let got = try fetch(server.url + "/cas/" + name, into: scratch.path + "/got")
        #expect(got.curl != 0 && got.received < value.count)
        #expect(try Curl.request("HEAD", server.url + "/cas/" + name).status == 404)
        #expect(try Curl.request("GET", server.url + "/cas/" + wholeName).status == 404)
        // Its true name is served whole.
        let trueName = SHA256.hash(data: value).map { String(format: "%02x", $0) }.joined()
        write(value, to: scratch.path + "/upload")
        _ = try Run.run("curl", ["-sS", "-T", scratch.path + "/upload", server.url + "/cas/" + trueName])
        let good = try fetch(server.url + "/cas/" + trueName, into: scratch.path + "/good")
        #expect(good.curl == 0 && good.received == value.count)
    }

    @Test("12 GETs of a 100 MB value read at 1 KiB/s and 6 unfinished 200 MiB PUTs hold under 256 MiB; a 4 KiB GET is answered",
          .enabled(if: curlInstalled, "curl is not installed"))
    func slowClientsBounded() throws {
        let scratch = try ScratchDirectory("stream-slow")
        let server = try ServerProcess(directory: scratch.path + "/cache")
        #expect(try Run.run("/bin/sh", ["-c", "head -c 100000000 /dev/urandom > '\(scratch.path)/big'"]).status == 0)
        #expect(try Run.run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-T", scratch.path + "/big",
                                     server.url + "/big"]).output == "201")
        #expect(try Curl.request("PUT", server.url + "/small", body: random(4096, seed: 6)).status == 201)
        var clients: [Process] = []
        // SIGKILL: the test process may block SIGTERM, and its children inherit the mask.
        defer { clients.forEach { kill($0.processIdentifier, SIGKILL); $0.waitUntilExit() } }
        for index in 0..<12 {
            let (process, _) = try Run.start("curl", ["-sS", "--limit-rate", "1k", "-o", "/dev/null",
                                                      "-D", scratch.path + "/head\(index)", server.url + "/big"])
            clients.append(process)
        }
        // A sparse 200 MiB file: curl sends it with its Content-Length, a little at a time.
        let upload = scratch.path + "/upload"
        _ = FileManager.default.createFile(atPath: upload, contents: nil)
        #expect(truncate(upload, 200 << 20) == 0)
        for index in 0..<6 {
            let (process, _) = try Run.start("curl", ["-sS", "--limit-rate", "2M", "-o", "/dev/null", "-T", upload,
                                                      server.url + "/upload\(index)"])
            clients.append(process)
        }
        // Every GET has its head and every PUT its staging file, growing (a condition polled,
        // not a time waited).
        let deadline = Date().addingTimeInterval(60)
        func ready() -> Bool {
            let heads = (0..<12).allSatisfy { ((try? FileManager.default.attributesOfItem(atPath: scratch.path + "/head\($0)")[.size] as? Int) ?? 0) > 0 }
            let staging = (FileManager.default.enumerator(atPath: scratch.path + "/cache/objects")?.allObjects as? [String] ?? [])
                .filter { ($0.split(separator: "/").last ?? "").hasPrefix("tmp.") }
                .filter { ((try? FileManager.default.attributesOfItem(atPath: scratch.path + "/cache/objects/" + $0)[.size] as? Int) ?? 0) > 0 }
            return heads && staging.count == 6
        }
        while !ready() && Date() < deadline { usleep(50_000) }
        #expect(ready(), "every slow client is connected and moving")
        let small = try Curl.request("GET", server.url + "/small", extra: ["--max-time", "10"])
        #expect(small.status == 200 && small.body.count == 4096)
        // A sanitizer's shadow memory is not the program's: the bound is checked in plain runs.
        if ProcessInfo.processInfo.environment["BLOBCACHE_SANITIZER"] == nil {
            let peak = try #require(ServeStreamingTests.peakResidentBytes(of: server.process.processIdentifier))
            #expect(peak <= 256 << 20, "serve's peak resident memory: \(peak) bytes")
        }
    }

    /// `VmHWM` of a running process.
    static func peakResidentBytes(of pid: Int32) -> Int? {
        let fd = open("/proc/\(pid)/status", O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 16384)
        let count = read(fd, &bytes, bytes.count)
        guard count > 0 else { return nil }
        let text = String(decoding: bytes[..<count], as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kib = Int(line.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") else { return nil }
        return kib * 1024
    }
}
