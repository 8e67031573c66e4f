import CLZ4

/// Opens a small sealed LZ4 payload into the end of the value's own array and decodes it
/// forward in the same array (LZ4's in-place decoding), instead of opening it into a buffer of
/// its own first: a 4 KiB get of an encrypted cache paid a heap allocation and a free for that
/// buffer (Swift's temporary allocations go to the heap above 1 KiB). The value's array is a
/// few dozen bytes larger than the value (`blobcache_lz4_in_place_capacity`).
///
///     switch OpenIntoValue.decode(sealed, cipher: cipher, context: context, rawCount: n) {
///     case .decoded(let value)?: …
///     case .tagMismatch?: … damage …
///     case nil: … open into a buffer, then decode …
///     }
enum OpenIntoValue {
    enum Outcome {
        /// The tag verified and the frame decoded to exactly the value's length.
        case decoded([UInt8])
        /// The tag does not verify: damaged, or sealed under another key or for another blob.
        case tagMismatch
    }

    /// Opens and decodes `sealed` (`nonce ‖ ciphertext ‖ tag` of an LZ4 frame of `rawCount`
    /// bytes); `nil` when the frame is not one this way decodes (several blocks, checksums, a
    /// block no smaller than the value) or does not decode: the caller then opens the seal
    /// again, from `sealed`, which this leaves as it was, and decodes as before.
    static func decode(_ sealed: UnsafeRawBufferPointer, cipher: CacheCipher, context: CacheCipher.Context,
                       rawCount: Int) -> Outcome? {
        // Nothing larger than the payload can decode to is allocated, whatever a header claims.
        guard rawCount > 0, sealed.count > CacheCipher.overhead,
              rawCount <= Compression.maxRawCount(payloadCount: sealed.count - CacheCipher.overhead, tag: .lz4) else { return nil }
        let frameSize = sealed.count - CacheCipher.overhead
        let capacity = blobcache_lz4_in_place_capacity(rawCount, frameSize)
        var verdict = Verdict.fallBack
        let value = [UInt8](unsafeUninitializedCapacity: capacity) { storage, initialized in
            let buffer = UnsafeMutableRawBufferPointer(storage)
            let frame = UnsafeMutableRawBufferPointer(rebasing: buffer[(capacity - frameSize)...])
            if !cipher.open(sealed, context: context, into: frame) {
                verdict = .tagMismatch
            } else if blobcache_lz4_decode_in_place(buffer.baseAddress, capacity, frameSize, rawCount) == 0 {
                verdict = .decoded
            }
            initialized = verdict == .decoded ? rawCount : 0
        }
        switch verdict {
        case .decoded: return .decoded(value)
        case .tagMismatch: return .tagMismatch
        case .fallBack: return nil
        }
    }

    /// What came of it: `Outcome` without the value, or a frame left to the caller.
    private enum Verdict { case decoded, tagMismatch, fallBack }
}
