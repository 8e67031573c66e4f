import BlobCache
@testable import BlobCacheRemote
import Testing

/// A Redis password never shows: not in a malformed URL's error, however it is spelled, nor
/// in anything that prints or dumps a store.
struct RedisSecretTests {
    @Test("a password holding '/', '?' or '#' makes the URL malformed, and the error shows none of it",
          arguments: ["Zm9v/YmFy+", "Zm9v?YmFy", "Zm9v#YmFy", "Zm9v/YmFy?ca=/x@y", "Zm9v?ca=YmFy"])
    func passwordInError(password: String) {
        for url in ["rediss://:\(password)@cache:6380/ci", "rediss://alice:\(password)@cache:6380/ci",
                    "redis+cluster://:\(password)@h1:7000,h2:7001/ci", "rediss+cluster://bob:\(password)@h1:7000/ci"] {
            #expect {
                try RedisLocation.store(url: url)
            } throws: { error in
                guard let error = error as? RemoteStoreError, case .invalidURL = error else { return false }
                return !"\(error)".contains("Zm9v") && !"\(error)".contains("YmFy")
            }
        }
    }

    @Test("a '#' is refused with the advice to write it %23, which is taken")
    func fragment() throws {
        #expect {
            try RedisLocation.store(url: "rediss://:a#b@cache/ci")
        } throws: { error in
            "\(error)".contains("%23")
        }
        #expect(try RedisLocation.store(url: "rediss://:a%23b@cache/ci") != nil)
    }

    @Test("description, debugDescription and dump of a store and its settings never show the password")
    func dumps() throws {
        let stores = [RedisRemoteStore(host: "cache", prefix: "ci", user: "alice", password: "hunter2"),
                      RedisRemoteStore(cluster: [RedisEndpoint(host: "h1")], prefix: "ci", password: "hunter2")]
        for store in stores {
            var dumped = ""
            dump(store, to: &dumped)
            var settings = ""
            dump(store.pool.settings, to: &settings)
            for text in [dumped, settings, "\(store)", String(reflecting: store), "\(store.pool.settings)",
                         String(reflecting: store.pool.settings)] {
                #expect(!text.contains("hunter2"), "\(text)")
            }
        }
    }
}
