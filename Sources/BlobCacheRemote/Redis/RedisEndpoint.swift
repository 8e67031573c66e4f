/// One Redis node's address.
///
///     let seed = RedisEndpoint(host: "10.0.0.7", port: 6379)
public struct RedisEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// A host name or an IP address (IPv6 without brackets).
    ///
    ///     RedisEndpoint(host: "::1", port: 7000).host   // "::1"
    public let host: String
    /// The TCP port.
    ///
    ///     RedisEndpoint(host: "cache.internal").port   // 6379
    public let port: Int

    /// The ports a node can listen on. The initializer takes any number, so that it need not
    /// throw; a connection to a port outside this range fails with `RemoteStoreError.redis`.
    ///
    ///     RedisEndpoint.ports.contains(6379)   // true
    public static let ports = 1...65535

    /// The node at `host:port` (`port` in `ports`, else every call to it fails).
    ///
    ///     let node = RedisEndpoint(host: "cache-1.internal", port: 6380)
    public init(host: String, port: Int = 6379) {
        self.host = host
        self.port = port
    }

    /// `host:port`, `[v6]:port` for an IPv6 address.
    ///
    ///     "\(RedisEndpoint(host: "::1", port: 7000))"   // "[::1]:7000"
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// `host:port` as a cluster writes it in `MOVED` and `ASK` (the last colon separates the
    /// port, so an unbracketed IPv6 address works); an empty host means `sameHost`, as Redis
    /// writes it when a node does not know its own address.
    ///
    ///     RedisEndpoint(parsing: "10.0.0.2:6381", sameHost: "10.0.0.1")   // 10.0.0.2:6381
    init?(parsing text: Substring, sameHost: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), Self.ports.contains(port) else {
            return nil
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.init(host: host.isEmpty ? sameHost : host, port: port)
    }
}
