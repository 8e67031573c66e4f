import Crypto

/// A blob id computed over a value that arrives in pieces, in order: MD5, or under encryption
/// the cache's keyed MD5; the id is `BlobHasher.id(of:)` of the pieces joined.
///
///     var hash = RunningBlobHash(pipeline.hasher)
///     hash.update(piece)
///     let id = hash.finish()
struct RunningBlobHash {
    private enum State {
        case md5(Insecure.MD5)
        case keyed(HMAC<Insecure.MD5>)
    }

    private var state: State

    init(_ hasher: BlobHasher) {
        switch hasher {
        case .md5: state = .md5(Insecure.MD5())
        case .keyed(let cipher): state = .keyed(cipher.blobIDHash)
        }
    }

    /// Feeds the next bytes of the value.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        switch state {
        case .md5(var md5):
            md5.update(bufferPointer: bytes)
            state = .md5(md5)
        case .keyed(var hmac):
            hmac.update(data: bytes)
            state = .keyed(hmac)
        }
    }

    /// The id of everything fed.
    func finish() -> BlobID {
        switch state {
        case .md5(let md5): md5.finalize().withUnsafeBytes { BlobID(digestBytes: $0)! }
        case .keyed(let hmac): hmac.finalize().withUnsafeBytes { BlobID(digestBytes: $0)! }
        }
    }
}
