import NIOCore

/// Where a slot map reply's bytes have been checked up to, kept between reads so that each
/// byte is looked at once: a reply that arrives in many reads is scanned piece by piece (its
/// lines and bulk lengths only, nothing built) and parsed into values once, when whole. Without
/// it, every read would parse the reply again from its start, which grows with the square of
/// its size, on the event loop every connection shares.
///
///     var scan = RESPSlotMapScan()
///     if try scan.isComplete(buffer) { let value = try parse(&buffer) }
struct RESPSlotMapScan {
    /// The most a slot map reply may take, whole or still arriving. A real one is a few hundred
    /// bytes per range: 8 MiB holds one range per slot for any cluster size Redis supports.
    static let maxBytes = 8 << 20
    /// The longest bulk string in a slot map (a host name, a node id, an address).
    static let maxBulkBytes = 1 << 10

    /// How many bytes from the reply's start hold whole values.
    private var scanned = 0
    /// The elements still owed by each array begun and not yet whole, innermost last.
    private var owed: [Int] = []

    /// Whether the reply starting at `buffer`'s reader index has all arrived; throws when it
    /// breaks the slot map's limits (size, nesting, a bulk string or array too long).
    mutating func isComplete(_ buffer: ByteBuffer) throws -> Bool {
        guard buffer.readableBytes <= Self.maxBytes else {
            throw RESPDecodingError(description: "a slot map reply larger than \(Self.maxBytes >> 20) MiB")
        }
        let bytes = buffer.readableBytesView
        while true {
            let start = bytes.startIndex + scanned
            guard start < bytes.endIndex else { return false }
            guard let cr = bytes[start...].firstIndex(of: 13) else {
                guard bytes.endIndex - start <= RESPDecoder.maxLineBytes else { throw Self.refusal }
                return false
            }
            guard cr + 1 < bytes.endIndex else { return false }
            guard bytes[cr + 1] == 10, cr > start else { throw RESPDecodingError(description: "a malformed slot map reply") }
            let line = String(decoding: bytes[(start + 1)..<cr], as: UTF8.self)
            var next = cr + 2
            switch bytes[start] {
            case UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: ":"):
                break
            case UInt8(ascii: "$"):
                guard let length = Int(line), length >= -1 else { throw RESPDecodingError(description: "a malformed bulk string length") }
                guard length <= Self.maxBulkBytes else { throw Self.refusal }
                if length >= 0 {
                    guard bytes.endIndex - next >= length + 2 else { return false }
                    next += length + 2
                }
            case UInt8(ascii: "*"):
                guard let count = Int(line), count >= -1 else { throw RESPDecodingError(description: "a malformed array length") }
                guard owed.count < RESPDecoder.maxDepth, count <= RESPDecoder.maxArrayElements else { throw Self.refusal }
                if count > 0 {
                    scanned = next - bytes.startIndex
                    owed.append(count)
                    continue
                }
            default:
                throw Self.refusal
            }
            scanned = next - bytes.startIndex
            // One value is whole: it ends every array it was the last element of.
            while let last = owed.last {
                if last > 1 { owed[owed.count - 1] = last - 1; break }
                owed.removeLast()
            }
            if owed.isEmpty { return true }
        }
    }

    /// Ready for the next reply.
    mutating func reset() {
        scanned = 0
        owed.removeAll(keepingCapacity: true)
    }

    private static let refusal = RESPDecodingError(description: "a slot map reply that is too large or too deeply nested")
}
