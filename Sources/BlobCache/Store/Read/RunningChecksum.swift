/// A loose blob's checksum computed over a payload that arrives in pieces, in order: XXH64
/// (format 2) or XXH3 (format 3), each covering the header's first 24 bytes and the payload
/// (docs/FORMAT.md). Every piece but the last is a whole number of 32-byte stripes, as
/// `XXHash64.Stream` needs; the last (fewer than 32 bytes, maybe none) goes to `finish`.
/// A class, so that whoever holds it shares one running state, whichever kind it is.
///
///     let running = RunningChecksum(for: header.checksum, head: headerBytes)!
///     running.absorb(firstPieces)
///     let digest = running.finish(tail: lastBytes)
final class RunningChecksum {
    private enum State {
        case xxh64(XXHash64.Stream)
        case xxh3(XXH3.Stream)
    }

    private var state: State

    /// The running checksum of the kind `checksum` names, past the header bytes `head`; `nil`
    /// for a kind that is not computed piece by piece (format 1's CRC-32).
    init?(for checksum: LooseBlobFormat.Checksum, head: UnsafeRawBufferPointer) {
        switch checksum {
        case .crc32, .pieces: return nil
        case .xxh64: state = .xxh64(XXHash64.Stream(seed: XXHash64.hash(head)))
        case .xxh3:
            let stream = XXH3.Stream()
            stream.update(head)
            state = .xxh3(stream)
        }
    }

    /// Takes whole stripes: `bytes.count` must be a multiple of 32.
    func absorb(_ bytes: UnsafeRawBufferPointer) {
        switch state {
        case .xxh64(var stream):
            stream.absorb(bytes)
            state = .xxh64(stream)
        case .xxh3(let stream):
            stream.update(bytes)
        }
    }

    /// The digest, after the last `tail.count` (< 32) bytes; the running state is left as it was.
    func finish(tail: UnsafeRawBufferPointer) -> UInt64 {
        switch state {
        case .xxh64(let stream): stream.finish(tail: tail)
        case .xxh3(let stream): stream.digest(after: tail)
        }
    }
}
