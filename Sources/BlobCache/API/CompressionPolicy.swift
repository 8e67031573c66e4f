/// How a cache compresses new values: a codec, the size from which values are stored raw, and
/// how much the codec must save for a value to be stored compressed. Whatever the policy, a
/// value is stored raw when its codec does not make it smaller, and every read gives back the
/// original bytes.
///
/// Compressing trades reads for disk. Decoding LZ4 costs more than reading the page cache: a
/// 1 MiB value compressed by half is read at about 5.5 GB/s on this project's 2-core machine,
/// raw at about 14 GB/s; but compressed it takes half the disk, half the page cache and half
/// the writing (the Benchmarks workload runner's `presets` workload measures each preset).
/// LZ4 decodes at about the same speed whatever it saved, so the default, `.adaptive`, keeps
/// a large value compressed only when it saves much.
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
    /// The least part of a value below `largeValueSize` that its codec must save for the value
    /// to be stored compressed, from 0 (any saving: today's `.balanced`) to 1 (nothing is
    /// stored compressed); a value saving less is stored raw. NaN stores every value raw.
    ///
    ///     policy.minimumSaving = 0.125   // compressed only when it saves an eighth or more
    public var minimumSaving: Double
    /// `minimumSaving` for values of `largeValueSize` bytes and more, whose decoding costs
    /// several times reading them raw (which goes straight into the returned array).
    ///
    ///     policy.largeMinimumSaving = 0.75   // a large value is kept compressed at 4:1 or better
    public var largeMinimumSaving: Double

    /// The size from which a value is large: `largeMinimumSaving` applies, LZ4 compresses and
    /// decodes it on every core, and stored raw it is read straight into the returned array.
    ///
    ///     let large = count >= CompressionPolicy.largeValueSize
    public static let largeValueSize = 256 << 10

    /// A policy of `codec`, storing values of `storingRawFrom` bytes and more raw, and any
    /// other value raw unless its codec saves `minimumSaving` of it (`largeMinimumSaving`,
    /// which is `minimumSaving` unless given, from `largeValueSize` bytes).
    ///
    ///     let policy = CompressionPolicy(codec: .lz4, storingRawFrom: 1 << 20)
    ///     let thrifty = CompressionPolicy(codec: .lz4, minimumSaving: 0.25, largeMinimumSaving: 0.5)
    public init(codec: Codec, storingRawFrom: Int? = nil, minimumSaving: Double = 0, largeMinimumSaving: Double? = nil) {
        self.codec = codec
        self.storingRawFrom = storingRawFrom
        self.minimumSaving = minimumSaving
        self.largeMinimumSaving = largeMinimumSaving ?? minimumSaving
    }

    /// The default: LZ4 for a value below 256 KiB that it shrinks by at least an eighth, and
    /// for a larger one only when it shrinks it to a quarter or less. Large values that
    /// compress like most real data (by about half) are stored raw and read at the speed of the
    /// page cache; large values that compress very well, and small ones, still take far less
    /// disk. The thresholds come from measurements in `Tuning.md`.
    ///
    ///     configuration.compression = .adaptive
    public static let adaptive = CompressionPolicy(codec: .lz4, minimumSaving: 1.0 / 8, largeMinimumSaving: 3.0 / 4)

    /// LZ4 for every value it makes smaller: about half the disk for typical data, the fastest
    /// writes of large compressible values, and reads that pay LZ4's decoding.
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

    /// The least part of a value of `count` bytes its codec must save: `largeMinimumSaving`
    /// from `largeValueSize` bytes, else `minimumSaving`.
    ///
    ///     let saving = CompressionPolicy.adaptive.minimumSaving(forValueOf: 1 << 20)   // 0.75
    public func minimumSaving(forValueOf count: Int) -> Double {
        count >= Self.largeValueSize ? largeMinimumSaving : minimumSaving
    }

    /// Whether a value of `count` bytes that its codec compressed to `compressedCount` bytes is
    /// stored compressed: when that is smaller by at least `minimumSaving(forValueOf: count)`.
    ///
    ///     let kept = CompressionPolicy.adaptive.storesCompressed(600_000, ofValueOf: 1 << 20)   // false
    public func storesCompressed(_ compressedCount: Int, ofValueOf count: Int) -> Bool {
        Compression.pays(compressedCount, of: count, minimumSaving: minimumSaving(forValueOf: count))
    }

    /// `adaptive`, `balanced`, `fastReads`, `smallest` or `off` for a preset, else the codec,
    /// the raw size and the savings: `lz4, raw from 1048576 bytes, saving at least 10%, 50%
    /// from 262144 bytes`.
    public var description: String {
        switch self {
        case .adaptive: "adaptive"
        case .balanced: "balanced"
        case .fastReads: "fastReads"
        case .smallest: "smallest"
        case .off: "off"
        default: custom
        }
    }

    /// The description of a policy that is no preset.
    private var custom: String {
        var parts = ["\(codec)"]
        if let storingRawFrom { parts.append("raw from \(storingRawFrom) bytes") }
        if minimumSaving != 0 || largeMinimumSaving != 0 {
            parts.append("saving at least \(Self.percent(minimumSaving))")
            if largeMinimumSaving != minimumSaving && !(largeMinimumSaving.isNaN && minimumSaving.isNaN) {
                parts.append("\(Self.percent(largeMinimumSaving)) from \(Self.largeValueSize) bytes")
            }
        }
        return parts.joined(separator: ", ")
    }

    /// `0.125` as `12.5%`, `0.75` as `75%`.
    private static func percent(_ fraction: Double) -> String {
        let value = fraction * 100
        guard value.isFinite, value == value.rounded(), abs(value) < 1e15 else { return "\(value)%" }
        return "\(Int(value))%"
    }
}
