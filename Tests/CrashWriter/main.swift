// A child process for the crash tests: sets values forever and prints each key whose set
// returned ("ok KEY BLOBID"), until the test kills it with SIGKILL.
//
//   blobcache-crash-writer DIR plain START   sets key-START, key-START+1, … (no limits)
//   blobcache-crash-writer DIR churn START   the same under a 1 MiB cap with removes, so
//                                            eviction and pack garbage collection run constantly
//   blobcache-crash-writer DIR hold          opens DIR, prints "open", and waits for stdin to close
import BlobCache
#if canImport(Glibc)
import Glibc
#endif

/// The value the writer stores under key number `n`: deterministic, so a reader can check it.
func expectedValue(_ n: Int) -> [UInt8] {
    var state = UInt64(n) &* 0x9E37_79B9_7F4A_7C15 &+ 1
    let size = Int(state % 6000) + 1
    var bytes = [UInt8](repeating: 0, count: size)
    for index in 0..<size {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        // Half the values compress (small alphabet), half do not.
        bytes[index] = n % 2 == 0 ? UInt8(truncatingIfNeeded: state >> 56) : UInt8(ascii: "a") + UInt8(state >> 60)
    }
    return bytes
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    print("usage: blobcache-crash-writer DIR plain|churn START | DIR hold")
    exit(2)
}
/// Writes a line straight to standard output (no buffering: the parent reads acknowledgements live).
func say(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress, $0.count) }
}
var configuration = BlobCache.Configuration()
if arguments[2] == "churn" {
    configuration.maxStoredBytes = 1 << 20
    configuration.packSegmentLimit = 1 << 16
}
do {
    let cache = try BlobCache(directory: arguments[1], configuration: configuration)
    if arguments[2] == "hold" {
        say("open")
        while getchar() != EOF {}
        try cache.close()
        exit(0)
    }
    var n = Int(arguments[3]) ?? 0
    while true {
        let value = expectedValue(n)
        try cache.set(value, forKey: "key-\(n)")
        say("ok key-\(n) \(BlobID(hashing: value).hex)")
        if arguments[2] == "churn" && n % 3 == 0 { try cache.removeValue(forKey: "key-\(n - 2)") }
        n += 1
    }
} catch {
    say("error \(error)")
    exit(1)
}
