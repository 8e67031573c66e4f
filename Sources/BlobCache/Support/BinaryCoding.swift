/// Appends little-endian fields to a byte array; the one way every on-disk format here is written.
struct BinaryWriter {
    var bytes: [UInt8]

    init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    mutating func append(_ value: UInt8) { bytes.append(value) }
    mutating func append(_ value: UInt16) { appendLittleEndian(value) }
    mutating func append(_ value: UInt32) { appendLittleEndian(value) }
    mutating func append(_ value: UInt64) { appendLittleEndian(value) }
    mutating func append(_ value: Int64) { appendLittleEndian(UInt64(bitPattern: value)) }
    mutating func append(bytes other: some Sequence<UInt8>) { bytes.append(contentsOf: other) }

    /// Writes the 16 digest bytes of `id` in MD5's printed order.
    mutating func append(digestOf id: BlobID) {
        appendLittleEndian(id.high.bigEndian)   // the digest's own byte order
        appendLittleEndian(id.low.bigEndian)
    }

    /// Writes a UTF-8 string preceded by its byte count as a `UInt32`.
    mutating func append(lengthPrefixed string: String) {
        var copy = string
        copy.withUTF8 { utf8 in
            append(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// Overwrites 4 bytes at `offset` with `value`, little-endian.
    mutating func patch(_ value: UInt32, at offset: Int) {
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(index))) }
    }

    private mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}

/// Reads little-endian fields from a byte buffer, failing (returning `nil`) instead of trapping
/// when the buffer is too short, so damaged input is always a typed error upstream.
struct BinaryReader {
    let buffer: UnsafeRawBufferPointer
    private(set) var offset: Int

    init(_ buffer: UnsafeRawBufferPointer, offset: Int = 0) {
        self.buffer = buffer
        self.offset = offset
    }

    var remaining: Int { buffer.count - offset }

    mutating func readUInt8() -> UInt8? { read(UInt8.self) }
    mutating func readUInt16() -> UInt16? { read(UInt16.self) }
    mutating func readUInt32() -> UInt32? { read(UInt32.self) }
    mutating func readUInt64() -> UInt64? { read(UInt64.self) }
    mutating func readInt64() -> Int64? { read(UInt64.self).map { Int64(bitPattern: $0) } }

    /// Reads the 16 digest bytes of a blob id.
    mutating func readBlobID() -> BlobID? {
        guard remaining >= 16 else { return nil }
        defer { offset += 16 }
        return BlobID(digestAt: offset, in: buffer)
    }

    /// Reads a `UInt32` byte count and that many bytes of UTF-8.
    mutating func readLengthPrefixedString() -> String? {
        readLengthPrefixedBytes().map { String(decoding: $0, as: UTF8.self) }
    }

    /// Reads a `UInt32` byte count and that many bytes, left where they lie.
    mutating func readLengthPrefixedBytes() -> UnsafeRawBufferPointer? {
        guard let count = readUInt32().map(Int.init) else { return nil }
        return readBytes(count)
    }

    /// Reads `count` raw bytes.
    mutating func readBytes(_ count: Int) -> UnsafeRawBufferPointer? {
        guard count >= 0, remaining >= count else { return nil }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count])
    }

    private mutating func read<T: FixedWidthInteger>(_: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { return nil }
        defer { offset += size }
        return T(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
