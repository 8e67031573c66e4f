import AsyncHTTPClient
import BlobCache
import NIOCore
import NIOHTTP1
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A remote tier in an S3 bucket: Amazon S3 or any store that speaks its API (SeaweedFS, MinIO,
/// Ceph, R2). Blobs go to `<prefix>/<hex[0:2]>/<hex[2:]>`, key records to
/// `<prefix>/keys/<hex[0:2]>/<hex[2:]>`, as `HTTPRemoteStore` lays them out, so `aws s3 ls`
/// shows the same tree. Requests are signed with AWS Signature Version 4 when credentials are
/// given, and sent unsigned (anonymous) otherwise. The body of a PUT is not hashed into the
/// signature (`UNSIGNED-PAYLOAD`): the cache verifies every blob by its id, and key records by
/// its authentication key, whoever wrote them.
///
/// A GET or HEAD answered 404 is a miss; any other answer outside 2xx is an error (grant
/// `s3:ListBucket`, or S3 answers 403 for a missing object). S3 keeps objects until they are
/// deleted: give the bucket a lifecycle rule for age, as the key records' expiry is checked by
/// the cache, not by S3. `timeout` bounds each call as a whole; a body over `maxObjectBytes` is
/// an error. Calls block their thread, so they are refused on a SwiftNIO event loop.
///
///     var configuration = BlobCache.Configuration()
///     configuration.remote = try S3RemoteStore(bucket: "ci-cache", prefix: "blobcache", credentials: AWSCredentials.find())
public struct S3RemoteStore: RemoteStore {
    /// How the bucket is named in a request.
    public enum AddressingStyle: String, Sendable, CaseIterable {
        /// `https://s3.region.amazonaws.com/bucket/key`: what most S3-compatible servers serve.
        case path
        /// `https://bucket.s3.region.amazonaws.com/key`: AWS's own default.
        case virtual
    }

    /// The bucket's name.
    public let bucket: String
    /// What every object's name starts with (without a trailing `/`; empty: the bucket's root).
    public let prefix: String
    /// The server: `scheme://host[:port]`, without a path.
    public let endpoint: String
    /// The region the requests are signed for.
    public let region: String
    /// How the bucket is named in a request.
    public let style: AddressingStyle
    /// How long one call may take in all, connecting included.
    public let timeout: Duration
    private let signer: SignatureV4?
    private let transport: HTTPTransport
    /// `scheme://` and `host[:port]` of the requests (the bucket's host in virtual style).
    private let scheme: String, host: String

    /// A store in `bucket` under `prefix`. `endpoint` defaults to AWS's for `region`, `style` to
    /// `.virtual` on AWS (`.path` for a bucket name with a dot, which AWS's certificates do not
    /// cover as a host name) and `.path` on any other endpoint; `credentials` `nil` sends
    /// requests unsigned. Throws `RemoteStoreError.invalidURL` for a bucket name S3 refuses, a
    /// prefix with a `.` or `..` segment, or an endpoint that is not `http(s)://host[:port]`.
    ///
    ///     let store = try S3RemoteStore(bucket: "cache", endpoint: "http://127.0.0.1:8333", credentials: nil)
    public init(bucket: String, prefix: String = "", endpoint: String? = nil, region: String = "us-east-1",
                style: AddressingStyle? = nil, credentials: AWSCredentials?, timeout: Duration = .seconds(2),
                maxObjectBytes: Int = HTTPRemoteStore.maxObjectBytes) throws {
        guard Self.isValidBucketName(bucket) else {
            throw RemoteStoreError.invalidURL("s3://\(bucket)", reason: "a bucket name is 3 to 63 lowercase letters, digits, dots and hyphens")
        }
        let segments = prefix.split(separator: "/")
        guard !segments.contains(where: { $0 == "." || $0 == ".." }) else {
            throw RemoteStoreError.invalidURL("s3://\(bucket)/\(prefix)", reason: "a prefix has no '.' or '..' segment")
        }
        let server = endpoint ?? "https://s3.\(region).amazonaws.com"
        let shown = RemoteStores.redacted(server)
        func invalid() -> RemoteStoreError {
            .invalidURL(shown, reason: "the endpoint is http://HOST[:PORT] or https://HOST[:PORT], without a path, a user or a fragment")
        }
        guard let separator = server.firstRange(of: "://"), case let scheme = server[..<separator.lowerBound].lowercased(),
              scheme == "http" || scheme == "https" else { throw invalid() }
        var authority = String(server[separator.upperBound...])
        while authority.hasSuffix("/") { authority.removeLast() }
        guard !authority.isEmpty, authority.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && !"/@?#".unicodeScalars.contains($0) })
        else { throw invalid() }
        // host, or host:port with a port from 1 to 65535 (an IPv6 literal is bracketed).
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            guard let port = Int(authority[authority.index(after: colon)...]), (1...65535).contains(port),
                  colon > authority.startIndex else { throw invalid() }
        }
        self.bucket = bucket
        self.prefix = segments.joined(separator: "/")
        self.endpoint = "\(scheme)://\(authority)"
        self.region = region
        self.style = style ?? (endpoint == nil && !bucket.contains(".") ? .virtual : .path)
        self.timeout = timeout
        self.scheme = scheme
        self.host = self.style == .virtual ? "\(bucket).\(authority)" : authority
        signer = credentials.map { SignatureV4(credentials: $0, region: region, service: "s3") }
        transport = HTTPTransport(timeout: timeout, maxBodyBytes: maxObjectBytes, followingRedirects: false)
    }

    /// Whether requests are signed (the store was given credentials).
    public var isSigned: Bool { signer != nil }

    /// `s3://bucket/prefix (endpoint, region, style)`, without any key.
    public var description: String {
        "s3://\(bucket)\(prefix.isEmpty ? "" : "/" + prefix) (\(endpoint), \(region), \(style.rawValue)\(signer == nil ? ", unsigned" : ""))"
    }

    /// The object's name in the bucket.
    ///
    ///     store.objectKey(of: .blob(id))   // "ci/5d/41402abc4b2a76b9719d911017c592"
    public func objectKey(of object: RemoteObject) -> String {
        let folder = object.kind == .key ? "keys/" : ""
        let name = "\(folder)\(object.hex.prefix(2))/\(object.hex.dropFirst(2))"
        return prefix.isEmpty ? name : "\(prefix)/\(name)"
    }

    /// The URL a request for `object` goes to.
    ///
    ///     store.url(of: .blob(id))   // "http://127.0.0.1:8333/cache/ci/5d/41402abc4b2a76b9719d911017c592"
    public func url(of object: RemoteObject) -> String { "\(scheme)://\(host)\(path(of: object))" }

    /// The request's path, percent-encoded once, as it is sent and signed.
    private func path(of object: RemoteObject) -> String {
        SignatureV4.canonicalURI(path: (style == .path ? "/\(bucket)/" : "/") + objectKey(of: object))
    }

    public func get(_ object: RemoteObject) throws -> [UInt8]? {
        let response = try send(.GET, object)
        if response.status == .notFound { return nil }
        try requireSuccess(response, "GET", object)
        guard let body = response.body else { return [] }
        return Array(body.readableBytesView)
    }

    public func exists(_ object: RemoteObject) throws -> Bool {
        let response = try send(.HEAD, object)
        if response.status == .notFound { return false }
        try requireSuccess(response, "HEAD", object)
        return true
    }

    public func put(_ object: RemoteObject, bytes: [UInt8], expiresAt: Date?) throws {
        try requireSuccess(try send(.PUT, object, body: bytes), "PUT", object)
    }

    public func delete(_ object: RemoteObject) throws {
        let response = try send(.DELETE, object)
        if response.status == .notFound { return }
        try requireSuccess(response, "DELETE", object)
    }

    /// Throws for an answer outside 2xx, with S3's error code (`<Code>` of its XML body) and,
    /// when S3 says the bucket is in another region (a redirect, which is not followed), that region.
    private func requireSuccess(_ response: HTTPClient.Response, _ method: String, _ object: RemoteObject) throws {
        guard !(200..<300).contains(response.status.code) else { return }
        var code = ""
        // The code comes first in S3's error document: its first KiB is enough.
        if let body = response.body, let text = body.getString(at: body.readerIndex, length: min(body.readableBytes, 1024)),
           let start = text.firstRange(of: "<Code>"), let end = text[start.upperBound...].firstRange(of: "</Code>") {
            code = String(text[start.upperBound..<end.lowerBound].prefix(64).filter { $0.isLetter || $0.isNumber })
        }
        if let region = response.headers.first(name: "x-amz-bucket-region"), region != self.region,
           region.count <= 32, region.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) {
            code += (code.isEmpty ? "" : " ") + "(the bucket is in \(region): give region=\(region))"
        }
        throw RemoteStoreError.s3(method: method, url: url(of: object), status: Int(response.status.code), code: code)
    }

    /// Sends one request for `object`, signed when the store has credentials.
    private func send(_ method: HTTPMethod, _ object: RemoteObject, body: [UInt8]? = nil) throws -> HTTPClient.Response {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: host)
        if body != nil { headers.add(name: "Content-Type", value: "application/octet-stream") }
        if let signer {
            let timestamp = AWSTimestamp(Date())
            let payloadHash = body == nil ? SignatureV4.emptyPayloadHash : "UNSIGNED-PAYLOAD"
            var signed = [("host", host), ("x-amz-content-sha256", payloadHash), ("x-amz-date", timestamp.dateTime)]
            if let token = signer.credentials.sessionToken { signed.append(("x-amz-security-token", token)) }
            for (name, value) in signed.dropFirst() { headers.add(name: name, value: value) }
            let request = SignatureV4.Request(method: method.rawValue, canonicalURI: path(of: object), headers: signed,
                                              payloadHash: payloadHash)
            headers.add(name: "Authorization", value: signer.authorization(for: request, at: timestamp))
        }
        return try transport.send(method, url(of: object), headers: headers, body: body)
    }

    /// S3's rule for new buckets: 3–63 characters of `a-z`, `0-9`, `.` and `-`, starting and
    /// ending with a letter or digit.
    static func isValidBucketName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        func isLetterOrDigit(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        guard (3...63).contains(bytes.count), isLetterOrDigit(bytes.first!), isLetterOrDigit(bytes.last!) else { return false }
        return bytes.allSatisfy { isLetterOrDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }
}
