/// How a blob's bytes are compressed on disk.
///
/// Whatever the codec, a blob is stored raw when compressing does not make it smaller, and its
/// header says so; reads always give back the original bytes.
///
///     let cache = try BlobCache(directory: path, configuration: .init(codec: .zlib(level: 6)))
public enum Codec: Sendable, Hashable, CustomStringConvertible {
    /// Store bytes as they are.
    case none
    /// LZ4 frame format (fast; `lz4 -d` reads a payload).
    case lz4
    /// zlib stream at a level from 1 (fast) to 9 (small); `zlib-flate -uncompress` reads a payload.
    case zlib(level: Int)

    /// zlib at its default level, 6.
    public static let zlib = Codec.zlib(level: 6)

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
