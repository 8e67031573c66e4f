import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The keys an S3 request is signed with: from the environment or the shared credentials file,
/// as the AWS CLI reads them. Instance, container and single-sign-on credentials (IMDS, ECS,
/// web identity, SSO, `credential_process`) are not read. Printing it never shows the secret
/// or the session token.
///
///     let credentials = try AWSCredentials.find()   // nil: no keys anywhere, requests go unsigned
public struct AWSCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The access key id (`AKIA…`): not secret, shown in logs.
    public let accessKeyID: String
    /// The secret access key: never shown.
    public let secretAccessKey: String
    /// The session token of temporary credentials, sent as `x-amz-security-token`.
    public let sessionToken: String?

    /// Credentials given directly.
    ///
    ///     let credentials = AWSCredentials(accessKeyID: "AKID", secretAccessKey: "secret")
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// `AWSCredentials(AKID…, secret ***)`: the access key id only.
    public var description: String {
        "AWSCredentials(\(accessKeyID), secret ***\(sessionToken == nil ? "" : ", session token ***"))"
    }

    /// The same as `description`.
    public var debugDescription: String { description }

    /// The access key id only, so `dump` and test failures never show the secret.
    public var customMirror: Mirror { Mirror(self, children: ["accessKeyID": accessKeyID], displayStyle: .struct) }

    /// Why credentials could not be read.
    public enum LookupError: Error, Sendable, Equatable, CustomStringConvertible {
        /// A profile was asked for (`profile=` or `AWS_PROFILE`) but the shared credentials file
        /// has no such section, or no file is there.
        case noProfile(String, file: String)
        /// The profile's section lacks `aws_access_key_id` or `aws_secret_access_key`.
        case incompleteProfile(String, file: String)
        /// `AWS_ACCESS_KEY_ID` is set without `AWS_SECRET_ACCESS_KEY`, or the other way round.
        case incompleteEnvironment

        /// One line for logs and the CLI.
        public var description: String {
            switch self {
            case .noProfile(let profile, let file): "no profile '\(profile)' in \(file)"
            case .incompleteProfile(let profile, let file): "profile '\(profile)' in \(file) lacks aws_access_key_id or aws_secret_access_key"
            case .incompleteEnvironment: "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together"
            }
        }
    }

    /// The credentials to use, in the AWS CLI's order: the named `profile` of the shared
    /// credentials file when one is given; else `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`
    /// (and `AWS_SESSION_TOKEN`); else the profile `AWS_PROFILE` names (or `default`) in
    /// `AWS_SHARED_CREDENTIALS_FILE` (or `~/.aws/credentials`). `nil` when none of them is there
    /// (only the `default` profile may be missing without an error).
    ///
    ///     let credentials = try AWSCredentials.find(profile: "ci")
    public static func find(profile: String? = nil,
                            environment: [String: String] = ProcessInfo.processInfo.environment) throws -> AWSCredentials? {
        let home = environment["HOME"] ?? ""
        var file = environment["AWS_SHARED_CREDENTIALS_FILE"].flatMap { $0.isEmpty ? nil : $0 } ?? "~/.aws/credentials"
        if file.hasPrefix("~/") { file = home + file.dropFirst() }
        if let profile { return try fromFile(file, profile: profile, required: true) }
        let key = environment["AWS_ACCESS_KEY_ID"].flatMap { $0.isEmpty ? nil : $0 }
        let secret = environment["AWS_SECRET_ACCESS_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        switch (key, secret) {
        case let (key?, secret?):
            let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
            return AWSCredentials(accessKeyID: key, secretAccessKey: secret, sessionToken: token)
        case (nil, nil): break
        default: throw LookupError.incompleteEnvironment
        }
        let named = environment["AWS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 }
        return try fromFile(file, profile: named ?? "default", required: named != nil)
    }

    /// The `[profile]` section of the INI file at `path`.
    private static func fromFile(_ path: String, profile: String, required: Bool) throws -> AWSCredentials? {
        guard let data = FileManager.default.contents(atPath: path) else {
            if required { throw LookupError.noProfile(profile, file: path) }
            return nil
        }
        guard let section = sections(of: String(decoding: data, as: UTF8.self))[profile] else {
            if required { throw LookupError.noProfile(profile, file: path) }
            return nil
        }
        guard let key = section["aws_access_key_id"], let secret = section["aws_secret_access_key"] else {
            throw LookupError.incompleteProfile(profile, file: path)
        }
        return AWSCredentials(accessKeyID: key, secretAccessKey: secret, sessionToken: section["aws_session_token"])
    }

    /// An INI text's sections: `[name]` lines (a comment may follow), then `key = value` lines;
    /// lines starting with `#` or `;` are comments. A byte order mark is skipped.
    static func sections(of text: String) -> [String: [String: String]] {
        var sections: [String: [String: String]] = [:]
        var current: String?
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingWhitespace().trimmingPrefix("\u{FEFF}")
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), let close = line.firstIndex(of: "]") {
                let name = line[line.index(after: line.startIndex)..<close].trimmingWhitespace()
                current = name
                sections[name, default: [:]] = sections[name] ?? [:]
                continue
            }
            guard let current, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingWhitespace().lowercased()
            sections[current]?[key] = line[line.index(after: equals)...].trimmingWhitespace()
        }
        return sections
    }
}
