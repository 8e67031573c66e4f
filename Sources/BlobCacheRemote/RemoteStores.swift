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
    /// The store a URL names:
    /// - `http://host[:port]/path`, `https://…`: an `HTTPRemoteStore`; `?layout=flat` picks
    ///   the flat layout (default `subdirs`).
    /// - `redis://host[:port][/prefix]`: a `RedisRemoteStore` (port 6379, prefix `blobcache`
    ///   by default).
    ///
    /// Throws `RemoteStoreError.invalidURL` for anything else.
    ///
    ///     let store = try RemoteStores.store(url: "http://cache.internal/blobs?layout=flat")
    public static func store(url text: String, timeout: Duration = .seconds(2)) throws -> any RemoteStore {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw RemoteStoreError.invalidURL(text, reason: "expected http://HOST/PATH, https://HOST/PATH or redis://HOST:PORT/PREFIX")
        }
        switch scheme {
        case "http", "https":
            var layout = HTTPRemoteStore.Layout.subdirs
            var base = text
            if let query = url.query {
                base = String(text.prefix(upTo: text.firstIndex(of: "?")!))
                for item in query.split(separator: "&") {
                    let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
                    guard parts.count == 2, parts[0] == "layout", let chosen = HTTPRemoteStore.Layout(rawValue: parts[1]) else {
                        throw RemoteStoreError.invalidURL(text, reason: "the only query is layout=subdirs or layout=flat")
                    }
                    layout = chosen
                }
            }
            return HTTPRemoteStore(baseURL: base, layout: layout, timeout: timeout)
        case "redis":
            let prefix = url.path.split(separator: "/").joined(separator: "/")
            guard prefix.allSatisfy({ !$0.isWhitespace }) else {
                throw RemoteStoreError.invalidURL(text, reason: "the prefix must not contain spaces")
            }
            return RedisRemoteStore(host: host, port: url.port ?? 6379, prefix: prefix.isEmpty ? "blobcache" : prefix, timeout: timeout)
        default:
            throw RemoteStoreError.invalidURL(text, reason: "unknown scheme '\(scheme)'; expected http, https or redis")
        }
    }
}
