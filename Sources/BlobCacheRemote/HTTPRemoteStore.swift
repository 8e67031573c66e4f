import AsyncHTTPClient
import BlobCache
import NIOCore
import NIOHTTP1
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
/// fine) is an error. Calls block for at most `timeout`.
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

    /// The base URL, without a trailing slash.
    public let baseURL: String
    /// How object names map to paths.
    public let layout: Layout
    /// How long one call may take, connecting included.
    public let timeout: Duration
    private let client: HTTPClient

    /// A store under `baseURL` (`http://` or `https://`).
    ///
    ///     let store = HTTPRemoteStore(baseURL: URL(string: "http://127.0.0.1:8080/cache")!, layout: .flat)
    public init(baseURL: URL, layout: Layout = .subdirs, timeout: Duration = .seconds(2), client: HTTPClient = .shared) {
        self.init(baseURL: baseURL.absoluteString, layout: layout, timeout: timeout, client: client)
    }

    /// A store under `baseURL` given as a string; see `init(baseURL:layout:timeout:client:)`.
    ///
    ///     let store = HTTPRemoteStore(baseURL: "http://127.0.0.1:8080/cache")
    public init(baseURL: String, layout: Layout = .subdirs, timeout: Duration = .seconds(2), client: HTTPClient = .shared) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.layout = layout
        self.timeout = timeout
        self.client = client
    }

    /// `http(s)://…` and the layout.
    public var description: String { "\(baseURL) (\(layout.rawValue))" }

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
        let address = url(of: object)
        var headers = HTTPHeaders()
        if body != nil { headers.add(name: "Content-Type", value: "application/octet-stream") }
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(url: address, method: method, headers: headers, body: body.map { .bytes($0) })
        } catch {
            throw RemoteStoreError.invalidURL(address, reason: "\(error)")
        }
        let (seconds, attoseconds) = timeout.components
        let deadline = NIODeadline.now() + .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        return try client.execute(request: request, deadline: deadline).wait()
    }
}
