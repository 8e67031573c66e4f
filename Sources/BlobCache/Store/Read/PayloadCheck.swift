/// Which checks a read makes of a blob's payload before it is trusted.
///
///     PackFormat.decode(record: bytes, expecting: info, cipher: cipher, checking: .tagWhenSealed)
enum PayloadCheck: Sendable {
    /// The outer checksum (XXH64 or CRC) and, for a sealed payload, its GCM tag: what fsck and
    /// adoption need, since they report each.
    case everything
    /// For a sealed payload opened under the cache's key, the GCM tag alone: it already proves
    /// every payload byte and the header fields a read acts on (id, codec and value length are
    /// its associated data; a wrong payload length moves the tag). The outer checksum is for
    /// checks without the key. A plain payload is checked by its checksum as always.
    case tagWhenSealed

    /// Whether the outer checksum can be skipped for a payload with this `sealed` flag.
    func tagSuffices(sealed: Bool, cipher: CacheCipher?) -> Bool {
        self == .tagWhenSealed && sealed && cipher != nil
    }
}
