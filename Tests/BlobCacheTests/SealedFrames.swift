import CLZ4
@testable import BlobCache

/// LZ4 frames of test values, as the cache writes them or as LZ4F writes them otherwise, and
/// their seals as an encrypted cache makes them: what the decoding tests feed the readers.
///
///     let seal = SealedFrames.seal(SealedFrames.cacheFrame(value), SealedFrames.context(value), cipher)
enum SealedFrames {
    /// A blob's seal context for `value` (its MD5 as id), claiming `rawLength` if given.
    static func context(_ value: [UInt8], rawLength: Int? = nil) -> CacheCipher.Context {
        .blob(id: BlobID(hashing: value), codec: .lz4, rawLength: rawLength ?? value.count)
    }

    /// `frame` sealed as an encrypted cache seals a blob's payload.
    static func seal(_ frame: [UInt8], _ context: CacheCipher.Context, _ cipher: CacheCipher) -> [UInt8] {
        frame.withUnsafeBytes { cipher.seal($0, context: context) }
    }

    /// The frame the cache writes for `value` (which must compress).
    static func cacheFrame(_ value: [UInt8]) -> [UInt8] {
        let encoded = value.withUnsafeBytes { Compression.encode($0, codec: .lz4, headroom: 0) }
        precondition(encoded.tag == .lz4, "test values compress")
        return encoded.buffer
    }

    /// `value` as LZ4F writes it: independent 256 KB blocks unless `change` says otherwise.
    static func lz4fFrame(_ value: [UInt8], _ change: (inout LZ4F_preferences_t) -> Void = { _ in }) -> [UInt8] {
        var preferences = LZ4F_preferences_t()
        preferences.frameInfo.blockMode = LZ4F_blockIndependent
        preferences.frameInfo.blockSizeID = LZ4F_max256KB
        change(&preferences)
        var frame = [UInt8](repeating: 0, count: LZ4F_compressFrameBound(value.count, &preferences))
        let written = frame.withUnsafeMutableBytes { out in
            value.withUnsafeBytes { LZ4F_compressFrame(out.baseAddress, out.count, $0.baseAddress, $0.count, &preferences) }
        }
        precondition(LZ4F_isError(written) == 0, "LZ4F_compressFrame failed")
        return Array(frame[..<written])
    }
}
