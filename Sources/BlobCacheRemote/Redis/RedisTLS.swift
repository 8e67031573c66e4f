import NIOCore
import NIOSSL
import Synchronization

/// How a store speaks TLS to Redis (`rediss://`): which certificate authorities it trusts, and
/// whether the server's certificate must name the host connected to. No client certificate is
/// sent (the server's `tls-auth-clients no` or `optional`); the password still goes in `AUTH`.
///
///     let store = RedisRemoteStore(host: "cache.internal", prefix: "ci", tls: RedisTLS(caFile: "/etc/redis/ca.pem"))
public struct RedisTLS: Sendable, Hashable {
    /// A PEM file of the authorities that may sign the server's certificate; nil trusts the
    /// system's roots.
    ///
    ///     var tls = RedisTLS(); tls.caFile = "/etc/redis/ca.pem"
    public var caFile: String?
    /// Whether the certificate must name the host (a DNS name, or an IP address for an address)
    /// the store connects to; on unless turned off (`?verify=ca` in a URL).
    ///
    ///     let chainOnly = RedisTLS(caFile: "/etc/redis/ca.pem", verifiesHostname: false)
    public var verifiesHostname: Bool

    /// TLS trusting `caFile` (or the system's roots), checking the host name unless told not to.
    ///
    ///     let tls = RedisTLS(caFile: "/etc/redis/ca.pem")
    public init(caFile: String? = nil, verifiesHostname: Bool = true) {
        self.caFile = caFile
        self.verifiesHostname = verifiesHostname
    }
}

/// A store's TLS context, made on first use (loading roots is slow, and a bad CA file should
/// fail calls with a clear message rather than the store's construction) and kept after.
final class RedisTLSContext: Sendable {
    let settings: RedisTLS
    private let made = Mutex<NIOSSLContext?>(nil)

    init(_ settings: RedisTLS) {
        self.settings = settings
    }

    /// The context, made now if it was not yet.
    func context() throws -> NIOSSLContext {
        try made.withLock { made in
            if let made { return made }
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = settings.verifiesHostname ? .fullVerification : .noHostnameVerification
            if let caFile = settings.caFile { configuration.trustRoots = .file(caFile) }
            do {
                let context = try NIOSSLContext(configuration: configuration)
                made = context
                return context
            } catch {
                let roots = settings.caFile.map { "the CA file \($0)" } ?? "the system's trust roots"
                throw RemoteStoreError.redis("TLS: cannot use \(roots): \(error)")
            }
        }
    }

    /// The name sent for SNI and checked against the certificate: none for an IP address,
    /// which NIOSSL then checks against the peer's address instead.
    static func serverName(for host: String) -> String? {
        // SwiftNIO's own parser (inet_pton), as NIOSSL decides it: a hand check would take
        // non-ASCII digits for an address.
        (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
    }
}
