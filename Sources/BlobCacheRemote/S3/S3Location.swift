import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What an `s3://` URL names: `s3://BUCKET[/PREFIX][?endpoint=URL][&region=REGION]
/// [&style=path|virtual][&profile=NAME]`, the prefix and the values percent-decoded. The region defaults to `AWS_REGION`, then
/// `AWS_DEFAULT_REGION`, then `us-east-1`; the endpoint to AWS's for the region.
///
///     let location = try S3Location.parse("s3://cache/ci?endpoint=http://127.0.0.1:8333&style=path")
///     let store = try location.store()
public struct S3Location: Sendable, Equatable {
    /// The bucket.
    public var bucket: String
    /// The prefix of every object's name (may be empty).
    public var prefix: String
    /// `http(s)://host[:port]`, or `nil` for AWS's endpoint of `region`.
    public var endpoint: String?
    /// The region requests are signed for.
    public var region: String
    /// The addressing style, or `nil` for the store's default.
    public var style: S3RemoteStore.AddressingStyle?
    /// The shared credentials file's profile to sign with, or `nil` for the usual lookup.
    public var profile: String?

    /// A location given part by part.
    ///
    ///     let location = S3Location(bucket: "cache", prefix: "ci", endpoint: "http://127.0.0.1:8333")
    public init(bucket: String, prefix: String = "", endpoint: String? = nil, region: String = "us-east-1",
                style: S3RemoteStore.AddressingStyle? = nil, profile: String? = nil) {
        self.bucket = bucket
        self.prefix = prefix
        self.endpoint = endpoint
        self.region = region
        self.style = style
        self.profile = profile
    }

    /// Reads an `s3://` URL; `environment` gives the default region. Throws
    /// `RemoteStoreError.invalidURL` naming what is wrong.
    ///
    ///     let location = try S3Location.parse("s3://cache?region=eu-west-1")
    public static func parse(_ text: String, environment: [String: String] = [:]) throws -> S3Location {
        func invalid(_ reason: String) -> RemoteStoreError { .invalidURL(text, reason: reason) }
        guard text.lowercased().hasPrefix("s3://") else { throw invalid("expected s3://BUCKET/PREFIX") }
        let rest = text.dropFirst(5)
        let target = rest.prefix { $0 != "?" }
        let bucket = String(target.prefix { $0 != "/" })
        // The prefix as the URL spells it, `%XX` escapes decoded (`team%20a`: `team a`).
        guard let prefix = String(target.dropFirst(bucket.count)).percentDecoded?.split(separator: "/").joined(separator: "/") else {
            throw invalid("the prefix has a '%' not followed by two hex digits, or is not UTF-8")
        }
        guard S3RemoteStore.isValidBucketName(bucket) else {
            throw invalid("the bucket name '\(bucket)' is not 3 to 63 lowercase letters, digits, dots and hyphens")
        }
        guard prefix.utf8.count <= 512, prefix.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw invalid("the prefix must be at most 512 bytes, without control characters")
        }
        var location = S3Location(bucket: bucket, prefix: prefix, endpoint: nil,
                                  region: environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? "us-east-1",
                                  style: nil, profile: nil)
        let query = rest.dropFirst(target.count).dropFirst()
        var seen: Set<String> = []
        for item in query.split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let value = parts[1].percentDecoded, !value.isEmpty else {
                throw invalid("each query item is NAME=VALUE")
            }
            guard seen.insert(parts[0]).inserted else { throw invalid("'\(parts[0])' is given twice") }
            switch parts[0] {
            case "endpoint": location.endpoint = value
            case "region":
                guard value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
                    throw invalid("a region is letters, digits and hyphens (us-east-1)")
                }
                location.region = value
            case "style":
                guard let style = S3RemoteStore.AddressingStyle(rawValue: value) else { throw invalid("style is path or virtual") }
                location.style = style
            case "profile": location.profile = value
            default: throw invalid("unknown query item '\(parts[0])'; expected endpoint, region, style or profile")
            }
        }
        return location
    }

    /// The store this location names, signed with the credentials `AWSCredentials.find` finds
    /// (for `profile`, when given).
    ///
    ///     let store = try location.store(timeout: .seconds(5))
    public func store(timeout: Duration = RemoteStores.defaultTimeout, maxObjectBytes: Int = HTTPRemoteStore.maxObjectBytes,
                      environment: [String: String] = ProcessInfo.processInfo.environment) throws -> S3RemoteStore {
        try S3RemoteStore(bucket: bucket, prefix: prefix, endpoint: endpoint, region: region, style: style,
                          credentials: AWSCredentials.find(profile: profile, environment: environment), timeout: timeout,
                          maxObjectBytes: maxObjectBytes)
    }
}
