extension BlobCache {
    /// One problem `check` found, as `blobcache fsck` prints it:
    /// `<problem-id> <blob id or key> <path>: <detail>`.
    public struct Finding: Sendable, Equatable, Codable, CustomStringConvertible {
        /// Errors set fsck's exit code; notes are reported only (like `git fsck`'s dangling objects).
        public enum Severity: String, Sendable, Codable { case error, note }

        /// Whether it sets the exit code (error) or is reported only (note).
        public var severity: Severity
        /// A stable id: see `docs/FSCK.md` for the list.
        public var problem: String
        /// The blob id or key concerned (`-` when neither applies).
        public var subject: String
        /// The file or directory concerned.
        public var path: String
        /// What is wrong, for a person.
        public var detail: String

        /// The finding as one line; the path escaped like a key (a planted file's name can hold a
        /// line break or a terminal escape).
        public var description: String { "\(problem) \(subject) \(BlobCache.escapedKey(path)): \(detail)" }
    }

    /// What `check` found (and, with repair, what it fixed).
    public struct CheckReport: Sendable, Equatable, Codable {
        /// Everything found, errors first.
        public var findings: [Finding] = []
        /// Entries the journal holds.
        public var entriesChecked = 0
        /// Loose blobs and live pack records verified.
        public var blobsChecked = 0
        /// Bytes of blobs read.
        public var bytesChecked = 0
        /// Whether a repair ran.
        public var repaired = false
        /// Errors still present after the repair (re-checked); empty without repair.
        public var errorsLeft: [Finding] = []

        /// The findings that set the exit code.
        public var errors: [Finding] { findings.filter { $0.severity == .error } }
        /// The findings reported only.
        public var notes: [Finding] { findings.filter { $0.severity == .note } }

        /// fsck(8)'s exit code: 0 no errors, 1 errors all repaired, 4 errors left.
        public var exitCode: Int32 {
            if errors.isEmpty { return 0 }
            return repaired && errorsLeft.isEmpty ? 1 : 4
        }
    }

    /// How `check` works.
    public struct CheckOptions: Sendable {
        /// Fix what is found (holding `DIR/lock`'s flock for the whole run, like `compact`).
        public var repair = false
        /// Skip the MD5 of each blob's content (header, length, checksum and decoding still checked).
        public var fast = false
        /// Limits to check the totals against; `nil` uses the directory's saved defaults.
        public var limits: Limits?
        /// The key of an encrypted cache. Without it, `check` still verifies the journal's
        /// framing and checksums and every blob's header and checksum, and says in a note
        /// (`encrypted-unchecked`) what it could not check; `repair` needs it. A key for a
        /// plain cache, or the wrong key, is an error (`cacheNotEncrypted`, `wrongEncryptionKey`).
        ///
        ///     options.encryption = .aesGCM(key: key)
        public var encryption: Encryption?
        /// How long to wait for `DIR/lock` while another process holds it, then fail with
        /// `inUse`; `nil` waits for ever, `.zero` fails at once.
        public var lockTimeout: Duration? = .seconds(30)
        /// Whether to wait for the lock for ever (`true`) or fail at once (`false`).
        @available(*, deprecated, renamed: "lockTimeout")
        public var waitForLock: Bool {
            get { lockTimeout != .zero }
            set { lockTimeout = newValue ? nil : .zero }
        }

        /// Default options: check everything, repair nothing.
        ///
        ///     var options = BlobCache.CheckOptions(); options.repair = true
        public init() {}
    }
}
