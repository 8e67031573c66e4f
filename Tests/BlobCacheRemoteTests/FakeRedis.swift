import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A scripted RESP server on a free loopback port, for replies no real server sends: each
/// command (an array of bulk strings) read on each connection is answered as `script` says.
/// Stopped (listener and connections closed) when dropped.
///
///     let server = try FakeRedis { _, command in command.first == "GET" ? .reply(Array("$-1\r\n".utf8)) : .silent }
final class FakeRedis: @unchecked Sendable {
    enum Action {
        /// These bytes, then the next command.
        case reply([UInt8])
        /// Close the connection without answering.
        case close
        /// Answer nothing, ever, on this connection (which stays open).
        case silent
    }

    /// What to do with `command`, the `index`th (from 0) on the `connection`th connection (from 0).
    typealias Script = @Sendable (_ connection: Int, _ index: Int, _ command: [String]) -> Action

    let port: Int
    private let listener: Int32
    private let state: State

    /// What the listener's and connections' threads share (not the server itself, so that
    /// dropping it closes everything).
    private final class State: @unchecked Sendable {
        let lock = NSLock()
        var sockets: [Int32] = []
        var accepted = 0
        var received: [[String]] = []
    }

    init(_ script: @escaping Script) throws {
        let state = State()
        self.state = state
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 && listen(listener, 64) == 0
            }
        }
        guard listening else { close(listener); throw POSIXError(.EADDRNOTAVAIL) }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread {
            while true {
                let fd = accept(listener, nil, nil)
                guard fd >= 0 else { return }
                let index = state.lock.withLock { () -> Int in
                    state.sockets.append(fd)
                    defer { state.accepted += 1 }
                    return state.accepted
                }
                Thread { Self.serve(fd, connection: index, state: state, script: script) }.start()
            }
        }.start()
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        state.lock.withLock { for fd in state.sockets { shutdown(fd, Int32(SHUT_RDWR)) } }
    }

    /// How many connections were accepted so far.
    var connections: Int { state.lock.withLock { state.accepted } }
    /// Every command read so far, in order.
    var commands: [[String]] { state.lock.withLock { state.received } }

    private static func serve(_ fd: Int32, connection: Int, state: State, script: Script) {
        defer {
            // Out of the list before closing, so that the number is never shut down once reused.
            state.lock.withLock { state.sockets.removeAll { $0 == fd } }
            close(fd)
        }
        var pending: [UInt8] = []
        var index = 0
        var silent = false
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            pending += chunk[..<count]
            while !silent, let (command, used) = Self.command(in: pending) {
                pending.removeFirst(used)
                state.lock.withLock { state.received.append(command) }
                switch script(connection, index, command) {
                case .reply(let bytes):
                    guard sendAll(fd, bytes) else { return }
                case .close:
                    return
                case .silent:
                    silent = true
                }
                index += 1
            }
        }
    }

    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// The first whole command in `bytes` (`*N` then N bulk strings) and its length in bytes.
    private static func command(in bytes: [UInt8]) -> ([String], Int)? {
        var position = 0
        func line() -> String? {
            guard let cr = bytes[position...].firstIndex(of: 13), cr + 1 < bytes.count else { return nil }
            defer { position = cr + 2 }
            return String(decoding: bytes[(position + 1)..<cr], as: UTF8.self)
        }
        guard !bytes.isEmpty, let count = line().flatMap({ Int($0) }) else { return nil }
        var arguments: [String] = []
        for _ in 0..<count {
            guard let length = line().flatMap({ Int($0) }), bytes.count - position >= length + 2 else { return nil }
            arguments.append(String(decoding: bytes[position..<(position + length)], as: UTF8.self))
            position += length + 2
        }
        return (arguments, position)
    }
}

extension FakeRedis {
    /// `CLUSTER SLOTS`' answer giving `ranges` (first slot, last slot, master's port on 127.0.0.1).
    static func slotMap(_ ranges: [(Int, Int, Int)]) -> [UInt8] {
        var text = "*\(ranges.count)\r\n"
        for (first, last, port) in ranges {
            text += "*3\r\n:\(first)\r\n:\(last)\r\n*2\r\n$9\r\n127.0.0.1\r\n:\(port)\r\n"
        }
        return Array(text.utf8)
    }

    static let null = Array("$-1\r\n".utf8)
}
