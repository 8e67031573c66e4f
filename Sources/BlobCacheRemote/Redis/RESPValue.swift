import NIOCore

/// One RESP2 reply, as far as the remote tier reads them. An error reply is a value, not a
/// thrown error: the connection that carried it is still good, and a cluster's redirections
/// (`MOVED`, `ASK`, `TRYAGAIN`) arrive as errors.
///
///     if case .bulk(let bytes) = reply { use(bytes) }
enum RESPValue: Sendable, Equatable {
    /// `+OK`.
    case simple(String)
    /// `-ERR …`, `-MOVED 3999 10.0.0.2:6379`.
    case error(String)
    /// `:1`.
    case integer(Int64)
    /// `$5\r\nhello`.
    case bulk([UInt8])
    /// `$-1` or `*-1`.
    case null
    /// `*2\r\n…`, taken only where the command calls for one (`CLUSTER SLOTS`).
    case array([RESPValue])

    /// The bulk string as text, for the few replies that carry names (node addresses).
    var text: String? {
        switch self {
        case .bulk(let bytes): String(decoding: bytes, as: UTF8.self)
        case .simple(let text): text
        default: nil
        }
    }
}

/// What a command's reply may be: the decoder refuses anything else from its first line.
///
///     connection.send(["CLUSTER", "SLOTS"], shape: .slotMap, until: deadline)
enum RESPShape: Sendable {
    /// A status, an error, an integer, nil or a bulk string within the connection's limit.
    case scalar
    /// As `.scalar`, or nested arrays of at most a few levels: the cluster's slot map.
    case slotMap
}

extension ByteBuffer {
    /// Writes `arguments` as one RESP command (an array of bulk strings), as Redis expects
    /// every command; binary-safe.
    ///
    ///     buffer.writeRESPCommand([Array("GET".utf8), Array(key.utf8)])
    mutating func writeRESPCommand(_ arguments: [[UInt8]]) {
        writeString("*\(arguments.count)\r\n")
        for argument in arguments {
            writeString("$\(argument.count)\r\n")
            writeBytes(argument)
            writeStaticString("\r\n")
        }
    }
}
