import NIOCore

/// The shapes of the replies still owed on one connection, oldest first: filled by the
/// handler as it writes each command, read by the decoder as each reply begins. Both live on
/// the connection's event loop.
final class RESPExpectations {
    private var shapes: [RESPShape] = []
    private var first = 0

    /// Whether no reply is owed.
    var isEmpty: Bool { first == shapes.count }
    /// The shape of the next reply, if one is owed.
    var next: RESPShape? { isEmpty ? nil : shapes[first] }

    /// One more command was written.
    func append(_ shape: RESPShape) { shapes.append(shape) }

    /// The oldest owed reply has arrived.
    func removeFirst() {
        first += 1
        if first == shapes.count { shapes.removeAll(keepingCapacity: true); first = 0 }
    }
}

/// Why the decoder gave up on a connection; the connection is then closed.
struct RESPDecodingError: Error, CustomStringConvertible {
    let description: String
}

/// RESP2 replies out of a connection's bytes. Each reply is checked from its first line
/// against the shape its command expects (`RESPExpectations`): a bulk string announcing more
/// than `limit` bytes, or an array where none is expected, is refused before any of its body is
/// gathered, so a server cannot make a read hold more than the limit. A slot map (the one
/// reply with arrays) is held to `RESPSlotMapScan`'s limits instead. Bytes arriving when no
/// reply is owed are refused too: read later, they would answer the wrong command.
///
///     ByteToMessageHandler(RESPDecoder(limit: 1 << 20, expectations: expectations))
struct RESPDecoder: ByteToMessageDecoder {
    typealias InboundOut = RESPValue

    /// The longest bulk string taken, in bytes.
    let limit: Int
    let expectations: RESPExpectations
    /// The longest line (status, error, length) taken: a server that never ends its line must
    /// not grow the buffer without bound.
    static let maxLineBytes = 64 << 10
    /// A slot map's arrays are small (a range, its nodes, each node's address and metadata);
    /// this bounds what a server can make the decoder build.
    static let maxArrayElements = 1 << 16
    static let maxDepth = 4
    /// How far the slot map reply now arriving has been checked.
    private var slotMapScan = RESPSlotMapScan()

    init(limit: Int, expectations: RESPExpectations) {
        self.limit = limit
        self.expectations = expectations
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard buffer.readableBytes > 0 else { return .needMoreData }
        guard let shape = expectations.next else {
            throw RESPDecodingError(description: "the server sent bytes no command asked for")
        }
        guard let value = try decodeValue(&buffer, shape: shape) else { return .needMoreData }
        expectations.removeFirst()
        context.fireChannelRead(wrapInboundOut(value))
        return .continue
    }

    /// The next reply of `shape`, taken from `buffer`, or nil (nothing taken) until it has all
    /// arrived. A slot map is scanned as it arrives and parsed once whole (`RESPSlotMapScan`).
    mutating func decodeValue(_ buffer: inout ByteBuffer, shape: RESPShape) throws -> RESPValue? {
        if shape == .slotMap {
            guard try slotMapScan.isComplete(buffer) else { return nil }
            slotMapScan.reset()
        }
        var cursor = buffer
        guard let value = try parse(&cursor, shape: shape, depth: 0) else { return nil }
        buffer = cursor
        return value
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }

    private func refusal(_ shape: RESPShape) -> RESPDecodingError {
        switch shape {
        case .scalar:
            RESPDecodingError(description: "a reply that is not a bulk string of at most \(limit) bytes, a status, an error or an integer")
        case .slotMap:
            RESPDecodingError(description: "a slot map reply that is too large or too deeply nested")
        }
    }

    /// One value from `buffer`, or nil when its bytes have not all arrived (the buffer's
    /// reader index is then meaningless: the caller parses a copy).
    private func parse(_ buffer: inout ByteBuffer, shape: RESPShape, depth: Int) throws -> RESPValue? {
        guard let type = buffer.readInteger(as: UInt8.self) else { return nil }
        switch type {
        case UInt8(ascii: "$"), UInt8(ascii: "*"), UInt8(ascii: ":"), UInt8(ascii: "+"), UInt8(ascii: "-"): break
        default: throw refusal(shape)
        }
        guard let line = try readLine(&buffer) else {
            // A length that already says too much is refused before its line ends.
            if type == UInt8(ascii: "$") || type == UInt8(ascii: "*"), buffer.readableBytes > 0 {
                let digits = buffer.readableBytesView
                if type == UInt8(ascii: "*"), shape == .scalar, digits.first != UInt8(ascii: "-") { throw refusal(shape) }
                if type == UInt8(ascii: "$"), digits.count > 20 || (Int(String(decoding: digits, as: UTF8.self)).map { $0 > limit } ?? false) {
                    throw refusal(shape)
                }
            }
            return nil
        }
        switch type {
        case UInt8(ascii: "+"):
            return .simple(String(decoding: line, as: UTF8.self))
        case UInt8(ascii: "-"):
            return .error(String(decoding: line, as: UTF8.self))
        case UInt8(ascii: ":"):
            guard let number = Int64(String(decoding: line, as: UTF8.self)) else { throw RESPDecodingError(description: "a malformed integer reply") }
            return .integer(number)
        case UInt8(ascii: "$"):
            guard let length = Int(String(decoding: line, as: UTF8.self)), length >= -1 else {
                throw RESPDecodingError(description: "a malformed bulk string length")
            }
            if length == -1 { return .null }
            guard length <= (shape == .slotMap ? RESPSlotMapScan.maxBulkBytes : limit) else { throw refusal(shape) }
            // Not `length + 2`, which overflows for a length near Int.max.
            guard buffer.readableBytes - 2 >= length else { return nil }
            let bytes = buffer.readBytes(length: length)!
            guard buffer.readBytes(length: 2) == [13, 10] else { throw RESPDecodingError(description: "a bulk string not ended by CRLF") }
            return .bulk(bytes)
        default:  // "*"
            guard let count = Int(String(decoding: line, as: UTF8.self)), count >= -1 else {
                throw RESPDecodingError(description: "a malformed array length")
            }
            if count == -1 { return .null }
            guard shape == .slotMap, depth < Self.maxDepth, count <= Self.maxArrayElements else { throw refusal(shape) }
            var elements: [RESPValue] = []
            // The count is the server's word: 9 bytes may announce 65,536 elements.
            elements.reserveCapacity(min(count, 64))
            for _ in 0..<count {
                guard let element = try parse(&buffer, shape: shape, depth: depth + 1) else { return nil }
                elements.append(element)
            }
            return .array(elements)
        }
    }

    /// The bytes up to the next CRLF (which is consumed), or nil when it has not arrived yet.
    private func readLine(_ buffer: inout ByteBuffer) throws -> [UInt8]? {
        let view = buffer.readableBytesView
        guard let cr = view.firstIndex(of: 13) else {
            guard view.count <= Self.maxLineBytes else { throw RESPDecodingError(description: "a reply line longer than \(Self.maxLineBytes) bytes") }
            return nil
        }
        guard cr + 1 < view.endIndex else { return nil }
        guard view[cr + 1] == 10 else { throw RESPDecodingError(description: "a reply line not ended by CRLF") }
        let line = buffer.readBytes(length: cr - view.startIndex)!
        buffer.moveReaderIndex(forwardBy: 2)
        return line
    }
}
