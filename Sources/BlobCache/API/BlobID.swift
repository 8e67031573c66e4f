import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The identity of a stored value: the MD5 of its uncompressed bytes (in an encrypted cache,
/// an HMAC-MD5 under a key derived from the cache's key, so `BlobID(hashing:)` does not give
/// it: use the id `set` or `store(_:)` returns).
///
/// Two keys whose values are byte-for-byte equal share one `BlobID`, and so one blob on disk.
///
///     let id = BlobID(hashing: Array("hello".utf8))
///     print(id)   // 5d41402abc4b2a76b9719d911017c592
public struct BlobID: Hashable, Sendable, Comparable, CustomStringConvertible, BitwiseCopyable {
    /// The 16 digest bytes, as two little-endian words (cheap to hash and compare).
    @usableFromInline let high: UInt64
    @usableFromInline let low: UInt64

    /// Hashes `bytes` with MD5.
    ///
    ///     let id = BlobID(hashing: data)
    public init<Bytes: ContiguousBytes>(hashing bytes: Bytes) {
        let digest = bytes.withUnsafeBytes { Insecure.MD5.hash(data: $0) }
        self = digest.withUnsafeBytes { BlobID(digestAt: 0, in: $0) }
    }

    /// Builds an id from its 16 raw digest bytes; `nil` when there are not exactly 16.
    ///
    ///     let id = BlobID(digestBytes: buffer[0..<16])
    public init?(digestBytes: some Collection<UInt8>) {
        guard digestBytes.count == 16 else { return nil }
        var high: UInt64 = 0, low: UInt64 = 0
        for (index, byte) in digestBytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.high = high
        self.low = low
    }

    /// The id whose 16 digest bytes start at `offset` in `bytes` (which must hold them): two
    /// loads, where `init?(digestBytes:)` takes any collection a byte at a time (3% of a
    /// replay's applying core in `perf record`, for every record naming a blob).
    init(digestAt offset: Int, in bytes: UnsafeRawBufferPointer) {
        high = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        low = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
    }

    /// An id from its digest as two words (the first 8 bytes, most significant first, and the last 8).
    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Parses 32 hexadecimal characters (either case); `nil` for anything else.
    ///
    ///     let id = BlobID(hex: "5d41402abc4b2a76b9719d911017c592")
    public init?(hex: some StringProtocol) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 32 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<16 {
            guard let hi = HexDigit.value(of: utf8[2 * index]), let lo = HexDigit.value(of: utf8[2 * index + 1]) else {
                return nil
            }
            bytes[index] = hi << 4 | lo
        }
        self.init(digestBytes: bytes)
    }

    /// The 16 digest bytes, most significant first (as MD5 prints them).
    public var digestBytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(index)))
            bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(index)))
        }
        return bytes
    }

    /// 32 lower-case hexadecimal characters.
    public var hex: String { HexDigit.lowercase(digestBytes) }

    /// The 32 lowercase hex digits of the digest (`hex`).
    public var description: String { hex }

    /// The digest is already uniformly distributed, so one word of it is a good hash input;
    /// the index hashes millions of ids at open.
    public func hash(into hasher: inout Hasher) { hasher.combine(low) }

    /// Skips `Hasher` (about a third of replay time, measured): the digest's low word, mixed
    /// with the table's seed, is already a uniformly distributed hash.
    public func _rawHashValue(seed: Int) -> Int {
        Int(truncatingIfNeeded: (low ^ UInt64(UInt(bitPattern: seed))) &* 0x9E37_79B9_7F4A_7C15)
    }

    /// Whether two ids are the same digest.
    public static func == (lhs: BlobID, rhs: BlobID) -> Bool { lhs.low == rhs.low && lhs.high == rhs.high }

    /// Orders ids as their digests' bytes (the order `fsck` reports in).
    public static func < (lhs: BlobID, rhs: BlobID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}
