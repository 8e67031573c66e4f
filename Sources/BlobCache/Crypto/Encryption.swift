import Crypto

extension BlobCache {
    /// How a cache encrypts what it stores (`Configuration.encryption`).
    ///
    /// With encryption on, every value is sealed with AES-256-GCM after compression, the keys
    /// and metadata of the journal and the index snapshot are sealed too, and a blob's id is
    /// an HMAC-MD5 of its bytes under a key derived from yours, so equal content cannot be
    /// recognised from outside (docs/SECURITY.md says what stays visible).
    ///
    ///     var configuration = BlobCache.Configuration()
    ///     configuration.encryption = .aesGCM(key: SymmetricKey(size: .bits256))
    public enum Encryption: Sendable {
        /// AES-256-GCM under `key`, which must be 256 bits (32 bytes); any other size is
        /// `invalidConfiguration` at open.
        ///
        ///     let encryption = BlobCache.Encryption.aesGCM(key: SymmetricKey(data: keyBytes))
        case aesGCM(key: SymmetricKey)

        /// The master key.
        var key: SymmetricKey {
            switch self { case .aesGCM(let key): key }
        }
    }
}
