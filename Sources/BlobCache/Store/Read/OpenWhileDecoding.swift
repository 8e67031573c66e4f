import CLZ4
import Synchronization

/// Opens a large sealed LZ4 payload while it is decoded. Opening the whole seal
/// first and then decoding on every core left the other cores idle for the whole of the
/// AES-GCM pass; here the seal is opened in pieces, each LZ4 block is decoded as soon as its
/// bytes are open, and the core that opens also decodes whenever a block is waiting.
///
/// Nothing decoded is handed out unless the tag verifies once the last piece is open. Until
/// then the plaintext is unauthenticated: it is only indexed and fed to LZ4's safe decoder,
/// which bounds every read and write whatever the bytes (as for any damaged payload), and the
/// result is dropped if the tag does not verify.
///
///     switch OpenWhileDecoding.decode(.borrowed(sealed), cipher: cipher, context: context, rawCount: n) {
///     case .decoded(let value, _)?: …
///     case .tagMismatch?, .undecodable?: … damage …
///     case nil: … open whole, then decode …
///     }
enum OpenWhileDecoding {
    /// How much ciphertext is opened at a time. The cache writes 256 KiB blocks for large
    /// values, so the first block is ready after a few pieces, and each next one a few later.
    static let piece = 32 << 10

    enum Outcome {
        /// The tag verified and the frame decoded to exactly the value's length; `pipelined`
        /// when its blocks were decoded as they opened (false: decoded whole after the tag,
        /// a frame of another kind).
        case decoded([UInt8], pipelined: Bool)
        /// The tag does not verify: damaged, or sealed under another key or for another blob.
        case tagMismatch
        /// The tag verified and the frame does not decode to the value's length.
        case undecodable
    }

    /// Opens and decodes `buffer` (`nonce ‖ ciphertext ‖ tag` of an LZ4 frame of `rawCount`
    /// bytes; one the read owns is opened in place) with `workers` threads (by default one per
    /// core, at most one per block the cache writes for that length, since a core with no
    /// block to decode only waits); `nil` when this way does not apply (no piecewise opening
    /// here, a length no payload of this size can decode to): the caller then opens whole and
    /// decodes. A lone worker opens and decodes in turn.
    static func decode(_ buffer: ReadBuffer, cipher: CacheCipher, context: CacheCipher.Context,
                       rawCount: Int, workers: Int? = nil) -> Outcome? {
        let sealed = buffer.bytes
        guard rawCount > 0, sealed.count >= CacheCipher.overhead,
              rawCount <= Compression.maxRawCount(payloadCount: sealed.count - CacheCipher.overhead, tag: .lz4),
              let (opening, ciphertext, tag) = cipher.beginOpening(sealed, context: context)
        else { return nil }
        // The plaintext goes where the ciphertext is when the read owns it, else to a buffer
        // of its own.
        let plain: UnsafeMutableRawBufferPointer
        var allocated: UnsafeMutableRawBufferPointer?
        if case .owned(let own) = buffer {
            plain = UnsafeMutableRawBufferPointer(rebasing: own[CacheCipher.nonceSize..<(own.count - CacheCipher.tagSize)])
        } else {
            let own = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, ciphertext.count), alignment: 16)
            allocated = own
            plain = UnsafeMutableRawBufferPointer(rebasing: own[..<ciphertext.count])
        }
        defer { allocated?.deallocate() }
        var verdict = Verdict.undecodable
        let value = [UInt8](unsafeUninitializedCapacity: rawCount) { storage, initialized in
            let work = Work(opening: opening, ciphertext: ciphertext, tag: tag, plain: plain,
                            out: UnsafeMutableRawBufferPointer(storage))
            if let workers {
                Parallel.run(Array(repeating: work.run, count: max(1, workers)))
            } else {
                Parallel.onEveryCore(upTo: rawCount / blobcache_lz4_block_max(rawCount) + 1, first: nil, work.run)
            }
            verdict = work.verdict()
            switch verdict {
            case .pipelined, .decodedWhole: initialized = rawCount
            case .tagMismatch, .undecodable: initialized = 0
            }
        }
        switch verdict {
        case .pipelined: return .decoded(value, pipelined: true)
        case .decodedWhole: return .decoded(value, pipelined: false)
        case .tagMismatch: return .tagMismatch
        case .undecodable: return .undecodable
        }
    }

    /// What came of one payload: `Outcome` without the value.
    private enum Verdict { case pipelined, decodedWhole, tagMismatch, undecodable }

    /// One payload's opening and decoding, shared by the cores. The opening, the index state
    /// and the plaintext past `published` blocks are touched only by the core holding
    /// `opener`; a block's entry and bytes are read only once `published` (release) says so;
    /// each block's output slice is written by the one core that took it.
    private final class Work: @unchecked Sendable {
        let opening: AESGCMKey.Opening
        let ciphertext: UnsafeRawBufferPointer
        let tag: UnsafeRawBufferPointer
        let plain: UnsafeMutableRawBufferPointer
        let out: UnsafeMutableRawBufferPointer
        let blocks: UnsafeMutableBufferPointer<blobcache_lz4_block>

        /// Held by the core opening the next piece.
        private let opener = Atomic<Bool>(false)
        /// Blocks whose entries are written and whose bytes are open.
        private let published = Atomic<Int>(0)
        /// The frame's block size, set before the first block is published.
        private let blockMax = Atomic<Int>(0)
        /// Blocks taken by a core to decode.
        private let taken = Atomic<Int>(0)
        /// Set (release) once every piece is open and the tag checked: `published` is final.
        private let opened = Atomic<Bool>(false)
        /// BoringSSL failed or the tag does not verify: nothing more is worth doing.
        private let openFailed = Atomic<Bool>(false)
        /// A block does not decode: no more are decoded, but the opening goes on to its tag,
        /// which tells damage (most likely) from a frame that was sealed bad.
        private let decodeFailed = Atomic<Bool>(false)

        // The opener's own, read by others only after every core has returned.
        private var openCount = 0
        private var index = blobcache_lz4_index_state()
        private var indexing = true
        private var verified = false

        init(opening: AESGCMKey.Opening, ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer,
             plain: UnsafeMutableRawBufferPointer, out: UnsafeMutableRawBufferPointer) {
            self.opening = opening
            self.ciphertext = ciphertext
            self.tag = tag
            self.plain = plain
            self.out = out
            blocks = .allocate(capacity: LZ4Frame.blockCapacity(rawCount: out.count, payloadCount: ciphertext.count))
            blocks.initialize(repeating: blobcache_lz4_block())
        }

        deinit { blocks.deallocate() }

        /// One core's share: decode a block whose bytes are open if there is one, else open
        /// the next piece if nobody is, else wait for whoever is.
        func run() {
            while !openFailed.load(ordering: .relaxed) {
                if !decodeFailed.load(ordering: .relaxed) {
                    let next = taken.load(ordering: .relaxed)
                    if next < published.load(ordering: .acquiring) {
                        if taken.compareExchange(expected: next, desired: next + 1, ordering: .relaxed).exchanged {
                            decodeBlock(next)
                        }
                        continue
                    }
                }
                if opened.load(ordering: .acquiring) {
                    // `published` is final: done once every block is taken (or decoding stopped).
                    if decodeFailed.load(ordering: .relaxed) || taken.load(ordering: .relaxed) >= published.load(ordering: .acquiring) {
                        return
                    }
                    continue
                }
                if opener.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
                    if !opened.load(ordering: .relaxed) { openNextPiece() }
                    opener.store(false, ordering: .releasing)
                } else {
                    Parallel.yield()   // another core is opening the piece this one waits for
                }
            }
        }

        private func decodeBlock(_ number: Int) {
            if blobcache_lz4_decode_blocks(plain.baseAddress, blocks.baseAddress, number + 1, number, 1,
                                           blockMax.load(ordering: .relaxed), out.baseAddress, out.count) != 0 {
                decodeFailed.store(true, ordering: .relaxed)
            }
        }

        /// Opens the next piece, publishes the blocks now wholly open, and once the last piece
        /// is open checks the tag (held `opener`).
        private func openNextPiece() {
            let end = min(openCount + OpenWhileDecoding.piece, ciphertext.count)
            guard opening.update(UnsafeRawBufferPointer(rebasing: ciphertext[openCount..<end]),
                                 into: UnsafeMutableRawBufferPointer(rebasing: plain[openCount..<end])) else {
                openFailed.store(true, ordering: .relaxed)
                return
            }
            openCount = end
            if indexing {
                let before = index.count
                let step = blobcache_lz4_frame_index_step(plain.baseAddress, openCount, plain.count, &index,
                                                          blocks.baseAddress, blocks.count)
                if step < 0 {
                    indexing = false   // not a frame of independent blocks: decoded whole after
                } else if index.count > before {
                    blockMax.store(index.blockMax, ordering: .relaxed)
                    published.store(index.count, ordering: .releasing)
                }
            }
            guard openCount == ciphertext.count else { return }
            verified = opening.finish(tag: tag)
            if !verified { openFailed.store(true, ordering: .relaxed) }
            opened.store(true, ordering: .releasing)
        }

        /// What came of it, once every core has returned.
        fileprivate func verdict() -> Verdict {
            guard verified else { return .tagMismatch }
            if indexing, !decodeFailed.load(ordering: .relaxed), LZ4Frame.blocks(index.count, of: index.blockMax, cover: out.count) {
                return .pipelined
            }
            // Authentic, but not a frame indexed and decoded block by block here: LZ4's own
            // frame decoder has the last word, as when a frame is opened whole.
            let decoded = Compression.decodeSequentially(UnsafeRawBufferPointer(plain), tag: .lz4, rawCount: out.count)
            guard let decoded else { return .undecodable }
            decoded.withUnsafeBytes { out.copyMemory(from: $0) }
            return .decodedWhole
        }
    }
}
