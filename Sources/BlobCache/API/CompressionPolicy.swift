/// How a cache compresses new values: a codec, and the size from which values are stored raw,
/// so that reading them decodes nothing. Whatever the policy, a value is stored raw when its
/// codec does not make it smaller, and every read gives back the original bytes.
///
/// Compressing trades reads for disk. Decoding LZ4 costs more than reading the page cache: a
/// 1 MiB value compressed by half is read at about 5.5 GB/s on this project's 2-core machine,
/// raw at about 14 GB/s; but compressed it takes half the disk, half the page cache and half
/// the writing (the Benchmarks workload runner's `presets` workload measures each preset).
///
///     var configuration = BlobCache.Configuration()
///     configuration.compression = .fastReads
public struct CompressionPolicy: Sendable, Hashable, CustomStringConvertible {
    /// The codec for values below `storingRawFrom`.
    public var codec: Codec
    /// Values of at least this many bytes (of the value, before any encoding; `packThreshold`
    /// counts stored bytes) are stored raw; `0` stores every value raw; `nil`: no size limit.
    /// A raw value of 256 KiB and more in a cache without encryption is read straight into the
    /// returned array and checked as it arrives; a smaller one, or any value of an encrypted
    /// cache (whose seal is opened after the file is read), decodes nothing but is read whole.
    public var storingRawFrom: Int?

    /// A policy of `codec`, storing values of `storingRawFrom` bytes and more raw.
    ///
    ///     let policy = CompressionPolicy(codec: .lz4, storingRawFrom: 1 << 20)
    public init(codec: Codec, storingRawFrom: Int? = nil) {
        self.codec = codec
        self.storingRawFrom = storingRawFrom
    }

    /// LZ4 for every value it makes smaller (the default): about half the disk for typical data,
    /// the fastest writes of large compressible values, and reads that pay LZ4's decoding.
    ///
    ///     configuration.compression = .balanced
    public static let balanced = CompressionPolicy(codec: .lz4)

    /// LZ4 below 256 KiB, raw from 256 KiB: large values are read at about the speed of the
    /// page cache (without encryption), small ones still take about half the disk. Large
    /// compressible values take their full size on disk and are slower to write. The remote
    /// tier, whose reads are bound by the network, still compresses them with LZ4.
    ///
    ///     configuration.compression = .fastReads
    public static let fastReads = CompressionPolicy(codec: .lz4, storingRawFrom: 256 << 10)

    /// zlib at level 6: the fewest bytes, at many times LZ4's cost to write and to read.
    ///
    ///     configuration.compression = .smallest
    public static let smallest = CompressionPolicy(codec: .zlib(level: 6))

    /// Nothing compressed: every read at the speed of the page cache, every value at its full size.
    ///
    ///     configuration.compression = .off
    public static let off = CompressionPolicy(codec: .none)

    /// The codec a value of `count` bytes is stored with (before the "smaller or raw" check).
    ///
    ///     let codec = CompressionPolicy.fastReads.codec(forValueOf: 1 << 20)   // .none
    public func codec(forValueOf count: Int) -> Codec {
        if let storingRawFrom, count >= storingRawFrom { return .none }
        return codec
    }

    /// `balanced`, `fastReads`, `smallest` or `off` for a preset, else the codec and the size:
    /// `lz4, raw from 1048576 bytes`.
    public var description: String {
        switch self {
        case .balanced: "balanced"
        case .fastReads: "fastReads"
        case .smallest: "smallest"
        case .off: "off"
        default: storingRawFrom.map { "\(codec), raw from \($0) bytes" } ?? "\(codec)"
        }
    }
}
