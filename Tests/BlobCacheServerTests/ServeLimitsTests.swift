import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `serve` under clients that hold connections without using them, and remotes that never
/// finish answering: every connection and every shutdown ends on time.
@Suite(.serialized)
struct ServeLimitsTests {
    static let request = Array("GET /k HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)

    @Test("idle connections are closed after --idle-timeout, and a GET meanwhile is answered")
    func idleConnectionsClosed() throws {
        let scratch = try ScratchDirectory("idle")
        let server = try ServerProcess(directory: scratch.path + "/cache", extra: ["--idle-timeout", "2"])
        _ = try Curl.request("PUT", "\(server.url)/k", body: Array("value".utf8))
        let idle = try (0..<300).map { _ in try RawSocket(port: server.port) }
        let get = try Curl.request("GET", "\(server.url)/k")
        #expect(get.status == 200 && get.body == Array("value".utf8))
        let deadline = ContinuousClock.now + .seconds(30)
        let closed = idle.filter { $0.closedByServer(before: deadline) }.count
        #expect(closed == 300, "\(closed) of 300 idle connections closed by the server")
        #expect(server.terminate() == 0, "\(server.log)")
    }

    @Test("slowloris clients, whose headers never end, are closed after --idle-timeout")
    func slowlorisClosed() throws {
        let scratch = try ScratchDirectory("slowloris")
        let server = try ServerProcess(directory: scratch.path + "/cache", extra: ["--idle-timeout", "2"])
        let clients = try (0..<10).map { _ in try RawSocket(port: server.port) }
        for client in clients { client.send(Self.request) }
        // Each sends one more header byte every half second: the pace is the attack, not a wait.
        var open = clients
        for _ in 0..<60 where !open.isEmpty {
            open = open.filter { $0.send(Array("X".utf8)) && !$0.isClosedNow }
            usleep(500_000)
        }
        #expect(open.isEmpty, "\(open.count) of 10 slowloris connections still open after 30 s")
        #expect(server.terminate() == 0, "\(server.log)")
    }

    @Test("past --max-connections a new connection waits until one closes")
    func connectionCap() throws {
        let scratch = try ScratchDirectory("cap")
        let server = try ServerProcess(directory: scratch.path + "/cache", extra: ["--max-connections", "2", "--idle-timeout", "2"])
        let held = try (0..<2).map { _ in try RawSocket(port: server.port) }
        // Answered only once the server has closed one of the two idle connections.
        let get = try Curl.request("GET", "\(server.url)/missing")
        #expect(get.status == 404)
        #expect(held.contains { $0.isClosedNow }, "the GET was answered while both connections were still open")
        #expect(server.terminate() == 0, "\(server.log)")
    }

    @Test("a client that stops reading a large reply is cut off after --idle-timeout")
    func stalledReaderCut() throws {
        let scratch = try ScratchDirectory("stalled")
        let server = try ServerProcess(directory: scratch.path + "/cache", extra: ["--idle-timeout", "2"])
        let value = [UInt8](try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom")).read(upToCount: 64 << 20) ?? Data())
        _ = try Curl.request("PUT", "\(server.url)/big", body: value)
        let client = try RawSocket(port: server.port)
        client.send(Array("GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        // The client reads nothing for a while: that slowness is what is under test.
        sleep(6)
        let received = client.readToEnd(idleSeconds: 30)
        #expect(received < value.count, "the whole reply (\(received) bytes) waited for a client that did not read")
        #expect(server.terminate() == 0, "\(server.log)")
    }

    @Test("SIGTERM while a GET waits on a trickling remote: serve exits 0, whether the remote call ends first or the shutdown timeout",
          arguments: [("redis-trickle", 2), ("http-trickle", 2), ("redis-trickle", 600)])
    func shutdownDespiteTricklingRemote(mode: String, remoteTimeout: Int) throws {
        let remote = try SlowServer(mode, size: 100_000)
        let url = mode.hasPrefix("redis") ? "redis://127.0.0.1:\(remote.port)/x" : "http://127.0.0.1:\(remote.port)/x"
        let scratch = try ScratchDirectory("shutdown")
        let server = try ServerProcess(directory: scratch.path + "/cache",
                                       extra: ["--remote", url, "--remote-timeout", String(remoteTimeout), "--shutdown-timeout", "3"])
        let (curl, output) = try Run.start("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "\(server.url)/missing"])
        try remote.waitForRequest()
        kill(server.process.processIdentifier, SIGTERM)
        // A safety bound, not a measurement: without the remote deadline this would be a day.
        let exited = DispatchSemaphore(value: 0)
        server.process.terminationHandler = { _ in exited.signal() }
        if server.process.isRunning, exited.wait(timeout: .now() + 60) != .success {
            Issue.record("serve did not exit within 60 s of SIGTERM: \(server.log)")
            kill(server.process.processIdentifier, SIGKILL)
            kill(curl.processIdentifier, SIGKILL)
        }
        server.process.waitUntilExit()
        #expect(server.process.terminationStatus == 0, "\(server.log)")
        let answer = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        curl.waitUntilExit()
        // Within the remote timeout the GET is answered (a miss); past the shutdown timeout
        // it is cut, and curl sees the connection close.
        if remoteTimeout < 3 { #expect(answer == "404", "curl: \(answer)") }
    }

    @Test("a refused request's body is not read to its end: the connection closes with the reply")
    func refusedBodyClosesConnection() throws {
        let scratch = try ScratchDirectory("refused-body")
        let server = try ServerProcess(directory: scratch.path + "/cache",
                                       extra: ["--auth-file", try ServeAccessTests.authFile(in: scratch.path), "--max-body", "1Ki"])
        for head in ["PUT /x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n",
                     "PUT /x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic YWxpY2U6YWxpY2UtcGFzcw==\r\nContent-Length: 100000000000\r\n\r\nab"] {
            let client = try RawSocket(port: server.port)
            client.send(Array(head.utf8))
            // The default idle timeout is 60 s: closed well before it, the server did not wait for the body.
            #expect(client.closedByServer(before: .now + .seconds(20)), "\(head)")
        }
        #expect(server.terminate() == 0, "\(server.log)")
    }
}
