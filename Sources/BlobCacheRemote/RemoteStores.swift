import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Remote stores named by URL, as the CLI's `--remote` takes them.
///
///     configuration.remote = try RemoteStores.store(url: "redis://127.0.0.1:6379/ci")
public enum RemoteStores {
    /// How long one remote call may take in all unless told otherwise: 2 seconds.
    ///
    ///     let store = try RemoteStores.store(url: url, timeout: RemoteStores.defaultTimeout * 2)
    public static let defaultTimeout: Duration = .seconds(2)

    /// The store a URL names:
    /// - `http://host[:port]/path`, `https://…`: an `HTTPRemoteStore`; `?layout=flat` picks
    ///   the flat layout (default `subdirs`).
    ///   A `user:password@` in the URL is sent as HTTP Basic authentication.
    /// - `s3://BUCKET[/PREFIX][?endpoint=URL][&region=REGION][&style=path|virtual][&profile=NAME]`:
    ///   an `S3RemoteStore` (`S3Location.parse`), its credentials found by `AWSCredentials.find`.
    /// - `redis://[[user]:password@]host[:port][/db][/prefix]` (port 6379, database 0, prefix
    ///   `blobcache` by default), `rediss://…[?ca=/path/ca.pem]` (TLS),
    ///   `redis+cluster://host1:port1,host2:port2/prefix` and `rediss+cluster://…` (Redis
    ///   Cluster): a `RedisRemoteStore`; see `RedisLocation`.
    ///
    /// `timeout` bounds each remote call as a whole; `maxObjectBytes` bounds what one answer
    /// may bring. Throws `RemoteStoreError.invalidURL` for anything else, and
    /// `AWSCredentials.LookupError` when the credentials an `s3://` URL asks for are not there.
    ///
    ///     let store = try RemoteStores.store(url: "http://cache.internal/blobs?layout=flat")
    public static func store(url text: String, timeout: Duration = defaultTimeout,
                             maxObjectBytes: Int = HTTPRemoteStore.maxObjectBytes) throws -> any RemoteStore {
        let shown = redacted(text)
        if let store = try RedisLocation.store(url: text, timeout: timeout, maxObjectBytes: maxObjectBytes) { return store }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw RemoteStoreError.invalidURL(shown, reason: "expected http://HOST/PATH, https://HOST/PATH, s3://BUCKET/PREFIX or redis://HOST:PORT/PREFIX")
        }
        try requireAuthority(of: url, in: text)
        switch scheme {
        case "http", "https":
            var layout = HTTPRemoteStore.Layout.subdirs
            var base = text
            if let query = url.query {
                base = String(text.prefix(upTo: text.firstIndex(of: "?")!))
                for item in query.split(separator: "&") {
                    let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
                    guard parts.count == 2, parts[0] == "layout", let chosen = HTTPRemoteStore.Layout(rawValue: parts[1]) else {
                        throw RemoteStoreError.invalidURL(shown, reason: "the only query is layout=subdirs or layout=flat")
                    }
                    layout = chosen
                }
            }
            return HTTPRemoteStore(baseURL: base, layout: layout, timeout: timeout)
        case "s3":
            return try S3Location.parse(text, environment: ProcessInfo.processInfo.environment)
                .store(timeout: timeout, maxObjectBytes: maxObjectBytes)
        default:
            throw RemoteStoreError.invalidURL(shown, reason: "unknown scheme '\(scheme)'; expected http, https, s3, redis, rediss, redis+cluster or rediss+cluster")
        }
    }

    /// Refuses what Foundation parsed differently from what was meant, or what no server can
    /// be: an `@` outside the user and password (a password with an unescaped `/`, `?` or `#`
    /// moves the host into it), a port outside 1–65535, a fragment.
    private static func requireAuthority(of url: URL, in text: String) throws {
        let shown = redacted(text)
        let rest = text[text.firstRange(of: "://")!.upperBound...]
        if rest.contains("@"), url.user == nil, url.password == nil {
            throw RemoteStoreError.invalidURL(shown, reason: "percent-encode '/', '?', '#' and '@' in a user name or password (%2F, %3F, %23, %40)")
        }
        if let port = url.port, !(1...65535).contains(port) {
            throw RemoteStoreError.invalidURL(shown, reason: "the port must be from 1 to 65535")
        }
        if url.fragment != nil { throw RemoteStoreError.invalidURL(shown, reason: "a remote URL has no '#' fragment") }
    }

    /// `url` with any password replaced by `***`, for messages. Everything up to the last `@`
    /// is taken as the user and password, so a password with an unescaped `/`, `?` or `#` is
    /// hidden too (with the user name, then).
    ///
    ///     RemoteStores.redacted("redis://:secret@host/x")   // "redis://:***@host/x"
    public static func redacted(_ url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        guard let at = rest.lastIndex(of: "@") else { return url }
        let userinfo = rest[..<at]
        let user = userinfo.prefix { $0 != ":" }
        let hidden: String
        if user.contains(where: { "/?#".contains($0) }) {
            hidden = "***"
        } else if userinfo.contains(":") {
            hidden = "\(user):***"
        } else {
            return url   // a user name alone: nothing secret
        }
        var shown = url
        shown.replaceSubrange(userinfo.startIndex..<at, with: hidden)
        return shown
    }
}
