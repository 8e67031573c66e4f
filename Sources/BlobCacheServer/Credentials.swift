import BlobCache
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import _CryptoExtras
import Synchronization

/// What a credential may do: read (GET, HEAD, PROPFIND, `/status`, `/metrics`), or also write
/// (PUT, DELETE, MKCOL).
///
///     guard access.allowsWrites else { return .forbidden }
public enum Access: String, Sendable, Hashable, CaseIterable {
    /// Reads only.
    case read
    /// Reads and writes.
    case readWrite = "read-write"

    /// Whether PUT and DELETE are allowed.
    public var allowsWrites: Bool { self == .readWrite }
}

/// The credentials `serve --auth-file` accepts, one a line:
///
///     # comments and blank lines are skipped
///     basic  USER  pbkdf2-sha256$ROUNDS$SALT$HASH  read-write
///     bearer NAME  sha256$HASH                     read
///
/// A Basic password is kept as PBKDF2-HMAC-SHA256 (salted, `ROUNDS` rounds); a bearer token,
/// which `blobcache credential bearer` insists be long and random, as its SHA-256. Both are
/// compared in constant time. The file is refused when its group or others may read it.
///
///     let credentials = try Credentials(contentsOf: "/etc/blobcache/credentials")
///     let access = credentials.access(forAuthorization: "Basic YWxpY2U6c2VjcmV0")
public struct Credentials: Sendable {
    /// One line of the file.
    public struct Entry: Sendable, Equatable {
        /// `basic` (a user's password) or `bearer` (a token).
        public enum Scheme: String, Sendable { case basic, bearer }

        /// How the secret is presented.
        public var scheme: Scheme
        /// The user (basic) or the token's name (bearer; logged, never sent).
        public var name: String
        /// The stored hash, as written in the file.
        public var hash: String
        /// What the credential may do.
        public var access: Access

        /// The line as the file holds it.
        ///
        ///     print(entry.line)   // basic alice pbkdf2-sha256$10000$…$… read-write
        public var line: String { "\(scheme.rawValue) \(name) \(hash) \(access.rawValue)" }
    }

    /// The credentials, in file order.
    public let entries: [Entry]
    /// Authorization values already verified, with what they allow: a password is derived once,
    /// not on every request (keyed by the value's SHA-256, so no secret is kept in memory).
    private let verified = VerifiedAuthorizations()

    /// PBKDF2 rounds for a new password (swift-crypto's floor for PBKDF2-SHA256): paid once
    /// per new Authorization value, off the event loops, then remembered.
    public static let passwordRounds = 210_000
    /// The shortest bearer token `credential bearer` takes: long enough that SHA-256 is a
    /// sufficient way to keep it.
    public static let minimumTokenLength = 24

    /// Credentials from `entries`.
    ///
    ///     let credentials = Credentials(entries: [entry])
    public init(entries: [Entry]) {
        self.entries = entries
    }

    /// Reads an auth file; throws `CredentialsError` when it cannot be read, is readable by its
    /// group or others, or has a line that is not a credential.
    ///
    ///     let credentials = try Credentials(contentsOf: path)
    public init(contentsOf path: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else { throw CredentialsError.unreadable(path: path, reason: String(cString: strerror(errno))) }
        guard status.st_mode & 0o077 == 0 else { throw CredentialsError.tooOpen(path: path) }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw CredentialsError.unreadable(path: path, reason: "not a readable UTF-8 file")
        }
        var entries: [Entry] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingWhitespace()
            if line.isEmpty || line.hasPrefix("#") { continue }
            entries.append(try Self.entry(parsing: line, path: path, number: index + 1))
        }
        guard !entries.isEmpty else { throw CredentialsError.empty(path: path) }
        var seen = Set<String>()
        for entry in entries where !seen.insert("\(entry.scheme.rawValue) \(entry.name)").inserted {
            // Appending a new line for a user would otherwise leave the old password in force.
            throw CredentialsError.malformed(path: path, line: 0, reason: "\(entry.scheme.rawValue) \(entry.name) appears twice; keep one line per name")
        }
        self.init(entries: entries)
    }

    private static func entry(parsing line: String, path: String, number: Int) throws -> Entry {
        let fields = line.split(whereSeparator: \.isWhitespace).map(String.init)
        func bad(_ reason: String) -> CredentialsError { .malformed(path: path, line: number, reason: reason) }
        guard fields.count == 4 else { throw bad("expected 4 fields: basic|bearer NAME HASH read|read-write") }
        guard let scheme = Entry.Scheme(rawValue: fields[0]) else { throw bad("'\(fields[0])' is neither basic nor bearer") }
        guard let access = Access(rawValue: fields[3]) else { throw bad("'\(fields[3])' is neither read nor read-write") }
        switch scheme {
        case .basic:
            guard PasswordHash(parsing: fields[2]) != nil else { throw bad("a basic credential's hash is pbkdf2-sha256$ROUNDS$SALT$HASH") }
            guard !fields[1].contains(":") else { throw bad("a user name must not contain ':'") }
        case .bearer:
            guard TokenHash(parsing: fields[2]) != nil else { throw bad("a bearer credential's hash is sha256$HEX") }
        }
        return Entry(scheme: scheme, name: fields[1], hash: fields[2], access: access)
    }

    /// A new auth-file line for `name`'s `secret`: a salted PBKDF2 hash for a password
    /// (`basic`), a SHA-256 for a token (`bearer`). Throws `CredentialsError.weakToken` for a
    /// token shorter than `minimumTokenLength`.
    ///
    ///     let line = try Credentials.line(scheme: .basic, name: "alice", secret: "s3cret", access: .readWrite)
    public static func line(scheme: Entry.Scheme, name: String, secret: String, access: Access) throws -> String {
        guard !name.isEmpty, !name.contains(where: \.isWhitespace), scheme == .bearer || !name.contains(":") else {
            throw CredentialsError.invalidName(name)
        }
        switch scheme {
        case .basic:
            var salt = [UInt8](repeating: 0, count: 16)
            var generator = SystemRandomNumberGenerator()
            for index in salt.indices { salt[index] = generator.next() }
            let hash = try PasswordHash.derive(secret, salt: salt, rounds: passwordRounds)
            return Entry(scheme: .basic, name: name, hash: hash.text, access: access).line
        case .bearer:
            guard secret.utf8.count >= minimumTokenLength else { throw CredentialsError.weakToken(minimum: minimumTokenLength) }
            return Entry(scheme: .bearer, name: name, hash: TokenHash(token: secret).text, access: access).line
        }
    }

    /// A credential that matched: its name and what it may do.
    public struct Grant: Sendable, Equatable {
        /// The user (basic) or the token's name (bearer).
        public let name: String
        /// What it may do.
        public let access: Access
    }

    /// What an `Authorization` header value allows; nil when it names no credential (or the
    /// secret is wrong). A password's first check derives its hash (a fraction of a second), so
    /// call this off an event loop; the outcome is remembered, and `check(remembered:)` reads it.
    ///
    ///     if let grant = credentials.access(forAuthorization: header) { print(grant.name) }
    public func access(forAuthorization value: String) -> Grant? {
        if case .checked(let grant) = check(remembered: value) { return grant }
        let found = verify(value)
        // A refused token cost one SHA-256 and is not remembered, so a flood of random tokens
        // cannot push out the passwords that cost a derivation each.
        if found != nil || !value.lowercased().hasPrefix("bearer ") {
            verified.remember(Self.fingerprint(of: value), found)
        }
        return found
    }

    /// What a value allows if it was checked before, without deriving anything.
    enum Remembered {
        case checked(Grant?)
        case unknown
    }

    func check(remembered value: String) -> Remembered {
        verified.lookup(Self.fingerprint(of: value))
    }

    private static func fingerprint(of value: String) -> [UInt8] { Array(SHA256.hash(data: Array(value.utf8))) }

    /// What an unknown user's password is derived against (it matches no password).
    private static let unknownUserHash = PasswordHash(parsing: "pbkdf2-sha256$\(passwordRounds)$AAAAAAAAAAAAAAAAAAAAAA==$" + String(repeating: "A", count: 43) + "=")!

    private func verify(_ value: String) -> Grant? {
        let parts = value.split(separator: " ", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return nil }
        let secret = parts[1].trimmingWhitespace()
        switch parts[0].lowercased() {
        case "basic":
            guard let decoded = Data(base64Encoded: secret), let pair = String(data: decoded, encoding: .utf8),
                  let colon = pair.firstIndex(of: ":") else { return nil }
            let user = String(pair[..<colon])
            let password = String(pair[pair.index(after: colon)...])
            let entry = entries.first { $0.scheme == .basic && $0.name == user }
            // An unknown user costs the same derivation, so the time taken does not say which
            // users exist.
            let stored = entry.flatMap { PasswordHash(parsing: $0.hash) } ?? Self.unknownUserHash
            guard let derived = try? PasswordHash.derive(password, salt: stored.salt, rounds: stored.rounds),
                  ConstantTime.equal(derived.hash, stored.hash), let entry else { return nil }
            return Grant(name: entry.name, access: entry.access)
        case "bearer":
            let presented = TokenHash(token: secret).digest
            // Every token is compared, so the time taken does not say which one came close.
            var match: Entry?
            for entry in entries where entry.scheme == .bearer {
                if let stored = TokenHash(parsing: entry.hash), ConstantTime.equal(stored.digest, presented) { match = entry }
            }
            return match.map { Grant(name: $0.name, access: $0.access) }
        default:
            return nil
        }
    }
}

/// Why an auth file or a new credential was refused.
///
///     catch let error as CredentialsError { print(error) }
public enum CredentialsError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The file cannot be read.
    case unreadable(path: String, reason: String)
    /// Its group or others may read it.
    case tooOpen(path: String)
    /// A line is not a credential.
    case malformed(path: String, line: Int, reason: String)
    /// It holds no credential.
    case empty(path: String)
    /// A token too short to be kept as a plain SHA-256.
    case weakToken(minimum: Int)
    /// A name that is empty, has spaces, or (for a user) a ':'.
    case invalidName(String)

    /// One line for the user.
    public var description: String {
        switch self {
        case .unreadable(let path, let reason): "cannot read the auth file \(path): \(reason)"
        case .tooOpen(let path): "the auth file \(path) may be read by its group or others; chmod 600 it"
        case .malformed(let path, let line, let reason): "\(path), line \(line): \(reason)"
        case .empty(let path): "the auth file \(path) holds no credential"
        case .weakToken(let minimum): "a bearer token must be at least \(minimum) characters (try: openssl rand -hex 32)"
        case .invalidName(let name): "'\(name)' cannot be a credential's name: no spaces, no ':' in a user name, not empty"
        }
    }
}

/// `pbkdf2-sha256$ROUNDS$SALT$HASH` (salt and hash in base64).
struct PasswordHash {
    let rounds: Int
    let salt: [UInt8]
    let hash: [UInt8]

    var text: String { "pbkdf2-sha256$\(rounds)$\(Data(salt).base64EncodedString())$\(Data(hash).base64EncodedString())" }

    init?(parsing text: String) {
        let fields = text.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 4, fields[0] == "pbkdf2-sha256", let rounds = Int(fields[1]), (210_000...10_000_000).contains(rounds),
              let salt = Data(base64Encoded: fields[2]), salt.count >= 8,
              let hash = Data(base64Encoded: fields[3]), hash.count == 32 else { return nil }
        self.rounds = rounds
        self.salt = Array(salt)
        self.hash = Array(hash)
    }

    private init(rounds: Int, salt: [UInt8], hash: [UInt8]) {
        self.rounds = rounds
        self.salt = salt
        self.hash = hash
    }

    static func derive(_ password: String, salt: [UInt8], rounds: Int) throws -> PasswordHash {
        let key = try KDF.Insecure.PBKDF2.deriveKey(from: Array(password.utf8), salt: salt, using: .sha256, outputByteCount: 32,
                                                    rounds: rounds)
        return PasswordHash(rounds: rounds, salt: salt, hash: key.withUnsafeBytes { Array($0) })
    }
}

/// `sha256$HEX`: a bearer token's SHA-256.
struct TokenHash {
    let digest: [UInt8]

    var text: String { "sha256$" + HexDigit.lowercase(digest) }

    init(token: String) { digest = Array(SHA256.hash(data: Array(token.utf8))) }

    init?(parsing text: String) {
        guard text.hasPrefix("sha256$") else { return nil }
        let hex = Array(text.utf8.dropFirst(7))
        guard hex.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 64, by: 2) {
            guard let byte = UInt8(String(decoding: hex[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        digest = bytes
    }
}

/// Byte comparison whose time does not depend on where the bytes differ.
enum ConstantTime {
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

/// Authorization values already checked (by fingerprint), accepted or refused, at most
/// `limit` of them: the table is emptied when full, so a client sending many values cannot
/// grow it, and a client repeating a wrong password does not cost a derivation each time.
final class VerifiedAuthorizations: Sendable {
    private let known = Mutex<[[UInt8]: Credentials.Grant?]>([:])
    static let limit = 4096

    func lookup(_ fingerprint: [UInt8]) -> Credentials.Remembered {
        known.withLock { table in
            guard let entry = table[fingerprint] else { return .unknown }
            return .checked(entry)
        }
    }

    func remember(_ fingerprint: [UInt8], _ grant: Credentials.Grant?) {
        known.withLock { table in
            if table.count >= Self.limit { table.removeAll() }
            table[fingerprint] = .some(grant)
        }
    }
}
