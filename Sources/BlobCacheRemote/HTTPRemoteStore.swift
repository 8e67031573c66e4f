import AsyncHTTPClient
import BlobCache
import NIOCore
import NIOHTTP1
import NIOPosix
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A remote tier on any HTTP server that takes PUT: nginx with `dav_methods PUT DELETE;
/// create_full_put_path on;`, a WebDAV server, or `blobcache serve` on another machine.
/// Blobs go to `<baseURL>/<hex[0:2]>/<hex[2:]>` (`.subdirs`, the default) or `<baseURL>/<hex>`
/// (`.flat`), as ccache names these layouts; key records to the same under `<baseURL>/keys/`.
/// GET answers other than 2xx are misses; a PUT or DELETE answered outside 2xx (DELETE: 404 is
/// fine) is an error. `timeout` bounds each call as a whole, from connecting to the response's
/// last byte; a response body over `maxObjectBytes` is an error. A user name and password in
/// the URL (`http://user:pass@host/…`) are sent as HTTP Basic authentication, never logged.
/// Calls block their thread, so they are refused (an error) on a SwiftNIO event loop.
///
///     var configuration = BlobCache.Configuration()
///     configuration.remote = HTTPRemoteStore(baseURL: URL(string: "http://cache.internal/blobcache")!)
public struct HTTPRemoteStore: RemoteStore {
    /// Where objects go under the base URL.
    public enum Layout: String, Sendable, CaseIterable {
        /// `<url>/<hex[0:2]>/<hex[2:]>`: 256 directories, as ccache's default.
        case subdirs
        /// `<url>/<hex>`: one directory.
        case flat
    }

    /// The base URL, without a trailing slash or a user name and password.
    public let baseURL: String
    /// How object names map to paths.
    public let layout: Layout
    /// How long one call may take in all, connecting included.
    public let timeout: Duration
    /// `Basic …` from the URL's user name and password, or nil.
    private let authorization: String?
    private let transport: HTTPTransport

    /// The largest response body taken: a blob of 1 GiB (the largest value the cache takes
    /// from a remote) and its header.
    public static let maxObjectBytes = (1 << 30) + (1 << 16)

    /// A store under `baseURL` (`http://` or `https://`).
    ///
    ///     let store = HTTPRemoteStore(baseURL: URL(string: "http://127.0.0.1:8080/cache")!, layout: .flat)
    public init(baseURL: URL, layout: Layout = .subdirs, timeout: Duration = .seconds(2)) {
        self.init(baseURL: baseURL.absoluteString, layout: layout, timeout: timeout)
    }

    /// A store under `baseURL` given as a string; see `init(baseURL:layout:timeout:)`.
    ///
    ///     let store = HTTPRemoteStore(baseURL: "http://127.0.0.1:8080/cache")
    public init(baseURL: String, layout: Layout = .subdirs, timeout: Duration = .seconds(2)) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        (self.baseURL, authorization) = Self.separatingCredentials(base)
        self.layout = layout
        self.timeout = timeout
        self.transport = HTTPTransport(timeout: timeout, maxBodyBytes: Self.maxObjectBytes)
    }

    /// `http(s)://…` without any user name or password, and the layout.
    public var description: String { "\(baseURL) (\(layout.rawValue))" }

    /// `url` without its `user:password@`, and those as a Basic `Authorization` value.
    private static func separatingCredentials(_ url: String) -> (url: String, authorization: String?) {
        guard let scheme = url.firstRange(of: "://") else { return (url, nil) }
        let authority = url[scheme.upperBound...].prefix { $0 != "/" }
        guard let at = authority.lastIndex(of: "@") else { return (url, nil) }
        var stripped = url
        stripped.removeSubrange(scheme.upperBound...at)
        let parsed = URL(string: url)
        let user = parsed?.user(percentEncoded: false) ?? ""
        let password = parsed?.password(percentEncoded: false) ?? ""
        return (stripped, "Basic " + Data("\(user):\(password)".utf8).base64EncodedString())
    }

    /// The URL of `object`.
    ///
    ///     store.url(of: .blob(id))   // "http://host/cache/5d/41402abc4b2a76b9719d911017c592"
    public func url(of object: RemoteObject) -> String {
        let folder = object.kind == .key ? "\(baseURL)/keys" : baseURL
        switch layout {
        case .subdirs: return "\(folder)/\(object.hex.prefix(2))/\(object.hex.dropFirst(2))"
        case .flat: return "\(folder)/\(object.hex)"
        }
    }

    public func get(_ object: RemoteObject) throws -> [UInt8]? {
        let response = try send(.GET, object)
        guard (200..<300).contains(response.status.code) else { return nil }
        guard let body = response.body else { return [] }
        return Array(body.readableBytesView)
    }

    public func exists(_ object: RemoteObject) throws -> Bool {
        (200..<300).contains(try send(.HEAD, object).status.code)
    }

    public func put(_ object: RemoteObject, bytes: [UInt8], expiresAt: Date?) throws {
        let response = try send(.PUT, object, body: bytes)
        guard (200..<300).contains(response.status.code) else {
            throw RemoteStoreError.unexpectedStatus(method: "PUT", url: url(of: object), status: Int(response.status.code))
        }
    }

    public func delete(_ object: RemoteObject) throws {
        let response = try send(.DELETE, object)
        guard (200..<300).contains(response.status.code) || response.status == .notFound else {
            throw RemoteStoreError.unexpectedStatus(method: "DELETE", url: url(of: object), status: Int(response.status.code))
        }
    }

    private func send(_ method: HTTPMethod, _ object: RemoteObject, body: [UInt8]? = nil) throws -> HTTPClient.Response {
        var headers = HTTPHeaders()
        if body != nil { headers.add(name: "Content-Type", value: "application/octet-stream") }
        if let authorization { headers.add(name: "Authorization", value: authorization) }
        return try transport.send(method, url(of: object), headers: headers, body: body)
    }
}
