// A child process for the crash tests (Tests/BlobCacheTests/CrashTests.swift): runs cache
// operations forever, announcing each before it starts and acknowledging it once it returned,
// until the test kills it with SIGKILL.
//
//   blobcache-crash-writer DIR hold
//       opens DIR, prints "open", and waits for stdin to close (for the lock tests)
//   blobcache-crash-writer DIR MODE SEED NEXT
//       opens DIR (no limits), prints "open COUNT" (the keys it holds), then runs MODE's
//       operations; new keys are key-NEXT, key-NEXT+1, …; SEED drives every random choice.
//       The modes (every one stores blobs of 4 KiB and more loose, smaller ones packed, in
//       64 KiB pack segments):
//     set      sets new keys, nothing else (no limits)
//     remove   sets new keys and removes random held ones (now and then an absent one: key--N)
//     clear    sets a batch of 1…40 new keys, then removes them all (removeAll()); repeats
//     evict    caps the cache at 256 KiB (setLimits), sets 10…40 new keys (at the cap once it
//              is full), lowers the cap to 32…160 KiB (setLimits, evicting at once), sets
//              5…20 keys at that cap, raises it back to 256 KiB; repeats
//     compact  5…25 times sets a new key or removes a held one (keeping about 40…150), then
//              compact() or compact(recompressingTo: .zlib(level: 1)), alternately; repeats
//     gc       caps the cache at 256 KiB and sets new keys, removing a held one every third
//              set: eviction and pack garbage collection run on almost every operation
//     shared, shared-capped
//              one of several writers on one directory: 400 operations on its own keys and
//              on 16 shared ones, reads checked (see `Writer.shared`), then "done"
//
// Protocol: one line per event, each written with one unbuffered write(2), so the parent reads
// them live and a line is never torn:
//   open COUNT                       the cache opened holding COUNT keys
//   do OP ARGS                       OP is about to start (the op in flight until its "ok")
//   ok OP ARGS RESULT [ATTRS]        OP returned. OP ARGS RESULT is one of:
//       set KEY BLOBID               KEY now holds expectedValue(number of KEY), whose id is BLOBID
//       rm KEY 0|1                   removeValue(forKey: KEY) returned false|true
//       clear                        removeAll() returned
//       limits BYTES                 setLimits(maxStoredBytes: BYTES) returned
//       compact                      compact() returned
//       compact-zlib                 compact(recompressingTo: .zlib(level: 1)) returned
//     ATTRS, each present only when not empty:
//       evicted=KEY,KEY,…            keys the operation evicted (held before, gone after, not
//                                    removed by the operation itself)
//       gc=N                         the operation ran N pack garbage collections
//   error DESCRIPTION                an operation threw; the writer exits 1
// So for every key the parent knows the last acknowledged state, and the operation in flight
// at the kill is the last "do" without its "ok".
import BlobCache
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The value the writer stores under key number `n`: deterministic, so a reader can check it.
/// (CrashTests.swift has a copy; every "ok set" carries the id, so the parent notices a drift.)
func expectedValue(_ n: Int) -> [UInt8] {
    var state = UInt64(bitPattern: Int64(n)) &* 0x9E37_79B9_7F4A_7C15 &+ 1
    let size = Int(state % 6000) + 1
    var bytes = [UInt8](repeating: 0, count: size)
    for index in 0..<size {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        // Half the values compress (small alphabet), half do not.
        bytes[index] = n % 2 == 0 ? UInt8(truncatingIfNeeded: state >> 56) : UInt8(ascii: "a") + UInt8(state >> 60)
    }
    return bytes
}

/// The value writers in shared mode store under `shared-<n % 16>`: n (8 bytes, big-endian),
/// then `expectedValue(n)`, so a reader can tell which set stored it and check every byte.
func sharedValue(_ n: Int) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: UInt64(n) >> (56 - 8 * $0)) } + expectedValue(n)
}

/// Writes a line straight to standard output (no buffering: the parent reads it live).
func say(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress, $0.count) }
}

/// SplitMix64, as the tests' SeededGenerator.
struct Generator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// A number in `range`.
    mutating func next(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }
}

/// The cache and what the writer knows it holds.
final class Writer {
    let cache: BlobCache
    var generator: Generator
    var nextKey: Int
    /// The keys the cache holds (the writer's own view, updated with every evicted list).
    var held: Set<String>

    init(cache: BlobCache, seed: UInt64, nextKey: Int) throws {
        self.cache = cache
        self.generator = Generator(state: seed)
        self.nextKey = nextKey
        self.held = Set(try cache.keys())
    }

    /// Announces `op`, runs it, and acknowledges it with its result and what it evicted and
    /// collected. `removes` is the key the operation removes itself (not an eviction).
    func run(_ op: String, removes: String? = nil, _ body: () throws -> String) throws {
        say("do \(op)")
        let before = try cache.totals().counters
        let result = try body()
        let after = try cache.totals().counters
        var line = "ok \(op)" + (result.isEmpty ? "" : " \(result)")
        if after.evictions != before.evictions {
            let now = Set(try cache.keys())
            var evicted = held.subtracting(now)
            if let removes { evicted.remove(removes) }
            held = now
            if !evicted.isEmpty { line += " evicted=" + evicted.sorted().joined(separator: ",") }
        }
        if after.packCollections != before.packCollections {
            line += " gc=\(after.packCollections - before.packCollections)"
        }
        say(line)
    }

    func setNew() throws {
        let n = nextKey, key = "key-\(n)"
        nextKey += 1
        try run("set \(key)") { try cache.set(expectedValue(n), forKey: key).hex }
        held.insert(key)
    }

    /// Removes a random held key, or (one time in ten, or when none is held) a never-set one.
    func removeOne() throws {
        let key: String
        if held.isEmpty || generator.next() % 10 == 0 {
            key = "key--\(generator.next(in: 1...1_000_000))"
        } else {
            let sorted = held.sorted()
            key = sorted[Int(generator.next() % UInt64(sorted.count))]
        }
        try run("rm \(key)", removes: key) { try cache.removeValue(forKey: key) ? "1" : "0" }
        held.remove(key)
    }

    func clear() throws {
        try run("clear") { try cache.removeAll(); return "" }
        held.removeAll()
    }

    func limit(_ bytes: Int) throws {
        try run("limits \(bytes)") { try cache.setLimits(.init(maxStoredBytes: bytes)); return "" }
    }

    func compact(zlib: Bool) throws {
        try run(zlib ? "compact-zlib" : "compact") {
            if zlib { try cache.compact(recompressingTo: .zlib(level: 1)) } else { try cache.compact() }
            return ""
        }
    }

    /// One of several writers on one directory (MultiProcessTests): 400 random operations on
    /// its own keys (set, remove, get and check) and on 16 keys every writer shares
    /// (`shared-J`, set to `sharedValue(n)` for an n with n % 16 == J, read and checked to be
    /// such a value), now and then a compact; then "done". A get that returns wrong bytes
    /// says "error" and exits 1. `capped`: the cache is capped at 512 KiB, so any key may be
    /// evicted (reads are checked, absence is fine).
    func shared(capped: Bool) throws {
        if capped { try cache.setLimits(.init(maxStoredBytes: 512 << 10)) }
        var own: [String: Int] = [:]
        for _ in 0..<400 {
            let roll = generator.next() % 100
            if roll < 35 || own.isEmpty {
                let n = nextKey, key = "key-\(n)"
                nextKey += 1
                say("do set \(key)")
                say("ok set \(key) \(try cache.set(expectedValue(n), forKey: key).hex)")
                own[key] = n
            } else if roll < 50 {
                let key = own.keys.sorted()[Int(generator.next() % UInt64(own.count))]
                say("do rm \(key)")
                say("ok rm \(key) \(try cache.removeValue(forKey: key) ? 1 : 0)")
                own[key] = nil
            } else if roll < 70 {
                let key = own.keys.sorted()[Int(generator.next() % UInt64(own.count))]
                let bytes = try cache.bytes(forKey: key)
                if bytes.map({ $0 != expectedValue(own[key]!) }) ?? !capped {
                    say("error get \(key) returned \(bytes.map { "\($0.count) wrong bytes" } ?? "nothing")")
                    exit(1)
                }
            } else if roll < 85 {
                let n = nextKey
                nextKey += 1
                let key = "shared-\(n % 16)"
                say("do sset \(key) \(n)")
                try cache.set(sharedValue(n), forKey: key)
                say("ok sset \(key) \(n)")
            } else if roll < 98 {
                let key = "shared-\(generator.next() % 16)"
                if let bytes = try cache.bytes(forKey: key) {
                    let n = bytes.count >= 8 ? Int(bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) : -1
                    guard n >= 0, "shared-\(n % 16)" == key, bytes == sharedValue(n) else {
                        say("error get \(key) returned bytes that no writer set")
                        exit(1)
                    }
                }
            } else {
                say("do compact")
                try cache.compact()
                say("ok compact")
            }
        }
        try cache.close()
        say("done")
        exit(0)
    }

    func loop(_ mode: String) throws {
        switch mode {
        case "set":
            while true { try setNew() }
        case "remove":
            while true {
                if held.count < 30 || generator.next() % 2 == 0 { try setNew() } else { try removeOne() }
            }
        case "clear":
            while true {
                for _ in 0..<generator.next(in: 1...40) { try setNew() }
                try clear()
            }
        case "evict":
            while true {
                try limit(256 << 10)
                for _ in 0..<generator.next(in: 10...40) { try setNew() }
                try limit(generator.next(in: 32...160) << 10)
                for _ in 0..<generator.next(in: 5...20) { try setNew() }
            }
        case "compact":
            var zlib = generator.next() % 2 == 0
            while true {
                for _ in 0..<generator.next(in: 5...25) {
                    if held.count < 40 || (held.count < 150 && generator.next() % 5 < 3) { try setNew() } else { try removeOne() }
                }
                try compact(zlib: zlib)
                zlib.toggle()
            }
        case "gc":
            try limit(256 << 10)
            while true {
                try setNew()
                if nextKey % 3 == 0 { try removeOne() }
            }
        case "shared", "shared-capped":
            try shared(capped: mode == "shared-capped")
        default:
            say("error unknown mode \(mode)")
            exit(2)
        }
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 3 && arguments[2] == "hold" || arguments.count == 5,
      arguments.count == 3 || (UInt64(arguments[3]) != nil && Int(arguments[4]) != nil) else {
    print("usage: blobcache-crash-writer DIR hold | DIR set|remove|clear|evict|compact|gc|shared|shared-capped SEED NEXT")
    exit(2)
}
var configuration = BlobCache.Configuration()
// LZ4 shrinks the compressible half of the values by under an eighth, too little for the
// default to keep; the crash tests want blobs of every codec.
configuration.compression = .balanced
if arguments[2] != "hold" {
    configuration.packThreshold = 4096
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
    let writer = try Writer(cache: cache, seed: UInt64(arguments[3])!, nextKey: Int(arguments[4])!)
    say("open \(writer.held.count)")
    try writer.loop(arguments[2])
} catch {
    say("error \(error)")
    exit(1)
}
