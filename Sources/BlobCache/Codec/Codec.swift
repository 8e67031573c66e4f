/// How a blob's bytes are compressed on disk.
///
/// Whatever the codec, a blob is stored raw when compressing does not make it smaller, and its
/// header says so; reads always give back the original bytes.
///
///     var configuration = BlobCache.Configuration()
///     configuration.codec = .zlib(level: 6)
public enum Codec: Sendable, Hashable, CustomStringConvertible {
    /// Store bytes as they are.
    case none
    /// LZ4 frame format (fast; `lz4 -d` reads a payload).
    case lz4
    /// zlib stream at a level from 1 (fast) to 9 (small); `zlib-flate -uncompress` reads a payload.
    case zlib(level: Int)

    /// zlib at its default level, 6.
    public static let zlib = Codec.zlib(level: 6)

    /// `none`, `lz4` or `zlib-N` (N the level), as `Codec(name:)` parses it.
    public var description: String {
        switch self {
        case .none: "none"
        case .lz4: "lz4"
        case .zlib(let level): "zlib-\(level)"
        }
    }

    /// Parses `none`, `lz4`, `zlib` or `zlib-N`; `nil` for anything else.
    ///
    ///     let codec = Codec(name: "zlib-9")
    public init?(name: String) {
        switch name.lowercased() {
        case "none", "raw": self = .none
        case "lz4": self = .lz4
        case "zlib": self = .zlib
        default:
            guard name.lowercased().hasPrefix("zlib-"), let level = Int(name.dropFirst(5)), (1...9).contains(level)
            else { return nil }
            self = .zlib(level: level)
        }
    }

    /// The tag written on disk for blobs this codec compressed.
    var tag: CodecTag {
        switch self {
        case .none: .none
        case .lz4: .lz4
        case .zlib: .zlib
        }
    }
}

/// The one-byte codec tag stored in every blob header and pack record.
enum CodecTag: UInt8, Sendable {
    case none = 0
    case lz4 = 1
    case zlib = 2

    var name: String {
        switch self {
        case .none: "none"
        case .lz4: "lz4"
        case .zlib: "zlib"
        }
    }
}

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Codec {
    /// Compresses `bytes` the way the cache compresses a payload; `nil` when the result would not
    /// be smaller (the cache then stores the bytes raw) or for `.none`.
    ///
    ///     let payload = Codec.lz4.compress(bytes)
    public func compress(_ bytes: some ContiguousBytes) -> [UInt8]? {
        bytes.withUnsafeBytes { raw in
            let encoded = Compression.encode(raw, codec: self, headroom: 0)
            return encoded.tag == .none ? nil : encoded.buffer
        }
    }

    /// Decompresses a payload this codec made back to exactly `originalCount` bytes; `nil` when
    /// it is damaged or does not expand to that length.
    ///
    ///     let bytes = Codec.lz4.decompress(payload, originalCount: 4096)
    public func decompress(_ payload: some ContiguousBytes, originalCount: Int) -> [UInt8]? {
        payload.withUnsafeBytes { Compression.decode($0, tag: tag, rawCount: originalCount) }
    }
}
