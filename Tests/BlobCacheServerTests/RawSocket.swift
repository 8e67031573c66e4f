import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection to loopback, for clients that misbehave on purpose: idle ones,
/// slowloris ones, ones that never read.
final class RawSocket {
    let descriptor: Int32

    /// Connects to `127.0.0.1:port` (blocking).
    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw Failure("connect: \(reason)")
        }
    }

    deinit { close(descriptor) }

    /// Sends `bytes`; false when the peer has closed the connection (EPIPE, ECONNRESET).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Whether the server has closed the connection, waiting until `deadline` at most for it
    /// to do so (a safety bound: the test fails rather than hangs). Bytes sent meanwhile are
    /// skipped.
    func closedByServer(before deadline: ContinuousClock.Instant) -> Bool {
        let left = max(.milliseconds(1), deadline - .now)
        var timeout = timeval(tv_sec: Int(left.components.seconds), tv_usec: Int(left.components.attoseconds / 1_000_000_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
        }
    }

    /// Whether the server has closed the connection already (no waiting).
    var isClosedNow: Bool {
        var byte: UInt8 = 0
        let count = recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
        return count == 0 || (count < 0 && errno == ECONNRESET)
    }

    /// Reads until the server closes the connection (or `seconds` pass without a byte); the
    /// number of bytes read.
    func readToEnd(idleSeconds seconds: Int) -> Int {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var total = 0
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { return total }
            total += count
        }
    }
}

/// `Tests/Fakes/slow_server.py` in one of its modes, on a free loopback port; killed when dropped.
final class SlowServer {
    let process = Process()
    let port: Int
    private let output = Pipe()

    init(_ mode: String, size: Int = 0) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fakes/slow_server.py").path
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, mode, String(size)]
        process.standardOutput = output
        try process.run()
        guard let line = Self.line(from: output), let port = Int(line) else {
            kill(process.processIdentifier, SIGKILL)
            throw Failure("slow_server.py printed no port")
        }
        self.port = port
    }

    /// Returns once a request has reached the server (its "request" line).
    func waitForRequest() throws {
        guard Self.line(from: output) == "request" else { throw Failure("slow_server.py ended before a request came") }
    }

    private static func line(from pipe: Pipe) -> String? {
        var line: [UInt8] = []
        while true {
            let byte = pipe.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { return nil }
            if first == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(first)
        }
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
