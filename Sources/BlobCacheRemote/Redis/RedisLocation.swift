import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The Redis URLs, parsed here alone: one server, over TLS, and Redis Cluster.
///
/// - `redis://[[user]:password@]host[:port][/db][/prefix]`: one server. A password is sent as
///   `AUTH`, with the user for an ACL user; `db` (digits, and only when a prefix follows) is
///   `SELECT`ed. No query is taken.
/// - `rediss://[[user]:password@]host[:port][/db][/prefix][?ca=/path/ca.pem]`: one server over
///   TLS. `ca=` names a PEM file of the authorities to trust instead of the system's roots;
///   `verify=ca` checks the chain but not that the certificate names the host (`verify=full`,
///   the default, checks both).
/// - `redis+cluster://[[user]:password@]host1[:port1],host2[:port2]…[/prefix]`: a Redis Cluster,
///   reached through any of the seed nodes listed; credentials apply to every node.
/// - `rediss+cluster://…[?ca=…]`: the same over TLS.
///
/// A user or password holding `/`, `?`, `#` or `@` percent-encodes them (`%2F`, `%3F`, `%23`,
/// `%40`); a `#` anywhere is refused, since it would start a fragment.
/// Ports default to 6379, the prefix to `blobcache`. A cluster has only database 0, so its
/// URL takes none. Hand-parsed, since Foundation's URL takes one host only.
///
///     let store = try RedisLocation.store(url: "redis+cluster://10.0.0.1:7000,10.0.0.2:7000/ci")
public enum RedisLocation {
    /// The store `text` names, or nil when its scheme is none of `redis`, `rediss`,
    /// `redis+cluster` and `rediss+cluster`; throws `RemoteStoreError.invalidURL` (the password hidden) when it is
    /// one of them but malformed, or its CA file cannot be read.
    ///
    ///     if let store = try RedisLocation.store(url: url, timeout: .seconds(2)) { use(store) }
    public static func store(url text: String, timeout: Duration = RemoteStores.defaultTimeout,
                             maxObjectBytes: Int = HTTPRemoteStore.maxObjectBytes) throws -> RedisRemoteStore? {
        guard let separator = text.firstRange(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard ["redis", "rediss", "redis+cluster", "rediss+cluster"].contains(scheme) else { return nil }
        let usesTLS = scheme.hasPrefix("rediss")
        let isCluster = scheme.hasSuffix("+cluster")
        let shown = RemoteStores.redacted(text)
        func invalid(_ reason: String) -> RemoteStoreError { .invalidURL(shown, reason: reason) }
        // A '#' starts a fragment, which names nothing here; in a password it must be %23.
        guard !text.contains("#") else {
            throw invalid("a '#' starts a URL fragment, which is not taken; percent-encode a '#' in a password as %23")
        }

        var rest = text[separator.upperBound...]
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        let authority = rest.prefix { $0 != "/" }
        let path = rest[authority.endIndex...]

        var user: String?
        var password: String?
        var hosts = authority[...]
        if let at = authority.lastIndex(of: "@") {
            let userinfo = authority[..<at]
            hosts = authority[authority.index(after: at)...]
            let colon = userinfo.firstIndex(of: ":")
            user = String(userinfo[..<(colon ?? userinfo.endIndex)]).percentDecoded
            guard user != nil else { throw invalid("the user is not properly percent-encoded") }
            if let colon {
                password = String(userinfo[userinfo.index(after: colon)...]).percentDecoded
                guard password != nil else { throw invalid("the password is not properly percent-encoded") }
            }
            if user?.isEmpty == true { user = nil }
        }
        guard password != nil || user == nil else {
            throw invalid("a user needs a password: \(scheme)://USER:PASSWORD@HOST/… (or \(scheme)://:PASSWORD@HOST/…)")
        }

        // The items are never quoted: a password holding a '/' or a '?' ends the authority
        // early, and its first part would then be taken for a host.
        var seeds: [RedisEndpoint] = []
        for (number, item) in hosts.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            guard let endpoint = endpoint(item) else {
                throw invalid("expected HOST[:PORT]\(isCluster ? ",HOST[:PORT]…" : "") after the scheme; host \(number + 1) is not"
                              + " (a '/', '?' or '#' in a password must be percent-encoded: %2F, %3F, %23)")
            }
            seeds.append(endpoint)
        }
        guard isCluster || seeds.count == 1 else { throw invalid("one host only; a cluster is \(scheme)+cluster://HOST1:PORT1,HOST2:PORT2/PREFIX") }

        var segments = path.split(separator: "/").map(String.init)
        var database = 0
        if segments.count >= 2, segments[0].hasPrefix("-"), segments[0].dropFirst().allSatisfy({ $0.isASCII && $0.isNumber }) {
            throw invalid("the database must be a number from 0")
        }
        if segments.count >= 2, segments[0].allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(segments[0]) {
            guard !isCluster else { throw invalid("a cluster has only database 0; give no /DB") }
            database = number
            segments.removeFirst()
        }
        let prefix = segments.joined(separator: "/")
        guard prefix.allSatisfy({ !$0.isWhitespace }) else { throw invalid("the prefix must not contain spaces") }

        var tls = RedisTLS()
        for item in query.split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1).map { String($0).percentDecoded ?? String($0) }
            switch (parts.first, parts.count) {
            case ("ca", 2) where usesTLS && !parts[1].isEmpty:
                guard FileManager.default.isReadableFile(atPath: parts[1]) else {
                    // An '@' in the query may mean a password with a '?' began it: no quote then.
                    throw invalid(query.contains("@") ? "cannot read the CA file given in ca=" : "cannot read the CA file \(parts[1])")
                }
                tls.caFile = parts[1]
            case ("verify", 2) where usesTLS && (parts[1] == "full" || parts[1] == "ca"):
                tls.verifiesHostname = parts[1] == "full"
            default:
                throw invalid(usesTLS ? "the queries are ca=/PATH/TO/CA.pem and verify=full or verify=ca" : "no query is taken without TLS (rediss)")
            }
        }

        let chosenPrefix = prefix.isEmpty ? "blobcache" : prefix
        if isCluster {
            return RedisRemoteStore(cluster: seeds, prefix: chosenPrefix, timeout: timeout, user: user, password: password,
                                    maxReplyBytes: maxObjectBytes, tls: usesTLS ? tls : nil)
        }
        return RedisRemoteStore(host: seeds[0].host, port: seeds[0].port, prefix: chosenPrefix, timeout: timeout, user: user,
                                password: password, database: database, maxReplyBytes: maxObjectBytes, tls: usesTLS ? tls : nil)
    }

    /// `host`, `host:port`, `[v6]` or `[v6]:port`; nil when malformed.
    private static func endpoint(_ text: Substring) -> RedisEndpoint? {
        var host: Substring
        var port: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                port = after.dropFirst()
            }
        } else if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        } else {
            host = text
        }
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "@" || $0 == "/" }) else { return nil }
        let number = port.map { Int($0) } ?? 6379
        guard let number, RedisEndpoint.ports.contains(number) else { return nil }
        return RedisEndpoint(host: String(host), port: number)
    }
}
