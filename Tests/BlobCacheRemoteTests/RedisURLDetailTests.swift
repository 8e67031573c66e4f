@testable import BlobCacheRemote
import Testing

/// The small parsers under the Redis URLs: percent escapes and "is this host an address".
struct RedisURLDetailTests {
    @Test("a '%' must be followed by two hex digits: '%+f' is refused")
    func strictEscapes() {
        for url in ["rediss://:a%+fb@cache/ci", "redis+cluster://u%-1:p@h1/ci", "rediss://:p@cache/ci?ca=%+f"] {
            #expect(throws: RemoteStoreError.self) { try RedisLocation.store(url: url) }
        }
    }

    @Test("only an IP address goes without a TLS server name; digits of other scripts make a host name")
    func serverName() {
        #expect(RedisTLSContext.serverName(for: "10.0.0.1") == nil)
        #expect(RedisTLSContext.serverName(for: "::1") == nil)
        #expect(RedisTLSContext.serverName(for: "cache.internal") == "cache.internal")
        #expect(RedisTLSContext.serverName(for: "١.٢.٣.٤") == "١.٢.٣.٤")
        #expect(RedisTLSContext.serverName(for: "1.2.3.4.5") == "1.2.3.4.5")
    }
}
