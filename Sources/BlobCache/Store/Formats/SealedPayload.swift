/// The step between a blob's checked payload and its codec: opening the AES-GCM seal of an
/// encrypted cache's blob (docs/FORMAT.md, "Encryption"). A cache is encrypted or not as a
/// whole, so a sealed payload without a key and a plain one with a key are both damage.
enum SealedPayload {
    /// Decodes `buffer` to exactly `rawLength` bytes, opening it first when `sealed` (under
    /// `cipher`, bound to `id`, `codec` and `rawLength`); a payload the read owns is opened in
    /// place. `first` runs alongside plain decoding, and before a seal is opened (it may read
    /// the payload as it was).
    static func decode(_ buffer: ReadBuffer, sealed: Bool, cipher: CacheCipher?, id: BlobID?,
                       codec: CodecTag, rawLength: Int, first: (() -> Void)? = nil) -> Result<[UInt8], BlobDamage> {
        let payload = buffer.bytes
        let value: [UInt8]?
        switch (sealed, cipher) {
        case (false, nil):
            value = Compression.decode(payload, tag: codec, rawCount: rawLength, first: first)
        case (true, let cipher?):
            first?()   // before opening: opening in place overwrites the payload
            guard let id else { return .failure(.sealing("sealed blob read without its id")) }
            // Stored raw: the plaintext is the value, opened straight into it; else decoded
            // straight from the plaintext.
            let context = CacheCipher.Context.blob(id: id, codec: codec, rawLength: rawLength)
            let decoded: [UInt8]??
            if codec == .lz4, rawLength >= Parallel.threshold,
               let outcome = OpenWhileDecoding.decode(buffer, cipher: cipher, context: context, rawCount: rawLength) {
                // Large: opened in pieces, each block decoded as soon as its bytes are open.
                switch outcome {
                case .decoded(let value, _): decoded = .some(value)
                case .undecodable: decoded = .some(nil)
                case .tagMismatch: decoded = nil
                }
            } else if codec == .none {
                decoded = cipher.open(payload, context: context).map { $0.count == rawLength ? $0 : nil }
            } else if codec == .lz4, rawLength < Parallel.threshold, case .borrowed = buffer,
                      let outcome = OpenIntoValue.decode(payload, cipher: cipher, context: context, rawCount: rawLength) {
                // Small, from a mapping: opened into the value's own array and decoded there.
                switch outcome {
                case .decoded(let value): decoded = .some(value)
                case .tagMismatch: decoded = nil
                }
            } else if case .owned(let own) = buffer {
                decoded = cipher.openInPlace(own, context: context).map { Compression.decode($0, tag: codec, rawCount: rawLength) }
            } else {
                decoded = cipher.open(payload, context: context) { Compression.decode($0, tag: codec, rawCount: rawLength) }
            }
            guard let decoded else {
                return .failure(.sealing("AES-GCM tag does not verify (damaged, or sealed under another key)"))
            }
            value = decoded
        case (true, nil):
            first?()
            return .failure(.sealing("blob is encrypted and no key was given"))
        case (false, _?):
            first?()
            return .failure(.sealing("blob is not encrypted in an encrypted cache"))
        }
        guard let value else {
            return .failure(.decompression("\(codec.name) payload does not decode to \(rawLength) bytes"))
        }
        return .success(value)
    }
}
