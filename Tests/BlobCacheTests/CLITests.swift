import Foundation
import Testing
@testable import BlobCache

@Suite("blobcache command line", .serialized, .disabled(if: underThreadSanitizer, childProcessesUnderTSan))
struct CLITests {
    @Test("put prints the blob id; get writes the bytes; a missing key exits 1 with one line on stderr")
    func putGet() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        let file = dir.appending("hello.txt")
        writeFile(file, Array("hello".utf8))
        let put = try cli.run(["put", "greeting", file])
        #expect(put.status == 0 && put.output == "5d41402abc4b2a76b9719d911017c592\n")
        let fromStdin = try cli.run(["put", "piped"], stdin: Data("hello".utf8))
        #expect(fromStdin.output == "5d41402abc4b2a76b9719d911017c592\n")
        let get = try cli.run(["get", "greeting"])
        #expect(get.status == 0 && get.output == "hello")
        let out = dir.appending("out.bin")
        #expect(try cli.run(["get", "piped", "-o", out]).status == 0)
        #expect(readFile(out) == Array("hello".utf8))
        let missing = try cli.run(["get", "nope"])
        #expect(missing.status == 1 && missing.stdout.isEmpty)
        #expect(missing.stderr.split(separator: "\n").count == 1)
    }

    @Test("global options are accepted before and after the command; DIR comes from the environment too")
    func globalOptionPlacement() throws {
        let dir = TemporaryDirectory()
        let cache = dir.appending("c")
        let cli = CLI(directory: cache)
        #expect(try cli.run(["--dir", cache, "put", "k"], stdin: Data([1]), withDir: false).status == 0)
        #expect(try cli.run(["get", "k", "--dir", cache], withDir: false).stdout == Data([1]))
        #expect(try cli.run(["--dir=\(cache)", "--max-entries", "5", "get", "k"], withDir: false).stdout == Data([1]))
        let viaEnvironment = try cli.run(["get", "k"], environment: ["BLOBCACHE_DIR": cache], withDir: false)
        #expect(viaEnvironment.stdout == Data([1]))
        let viaXDG = try cli.run(["put", "x"], stdin: Data([2]), environment: ["XDG_CACHE_HOME": dir.path], withDir: false)
        #expect(viaXDG.status == 0)
        #expect(FileManager.default.fileExists(atPath: dir.appending("blobcache/journal")))
        let viaHome = try cli.run(["put", "y"], stdin: Data([3]), environment: ["HOME": dir.path], withDir: false)
        #expect(viaHome.status == 0)
        #expect(FileManager.default.fileExists(atPath: dir.appending(".cache/blobcache/journal")))
    }

    @Test("put options: --ttl expires, --codec picks the codec, --pin survives clear")
    func putOptions() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        let text = Data(Samples.compressible(100_000))
        #expect(try cli.run(["put", "z", "--codec", "zlib"], stdin: text).status == 0)
        #expect(try cli.run(["put", "n", "--codec", "none"], stdin: text + Data([1])).status == 0)
        #expect(try cli.run(["put", "p", "--pin"], stdin: Data([7])).status == 0)
        #expect(try cli.run(["put", "t", "--ttl", "3600"], stdin: Data([8])).status == 0)
        do {
            let entries = try BlobCache(directory: dir.path).entries()
            #expect(entries.first { $0.key == "z" }?.codec == "zlib")
            #expect(entries.first { $0.key == "n" }?.codec == "none")
            let expiry = try #require(entries.first { $0.key == "t" }?.expiry)
            #expect(abs(expiry.timeIntervalSinceNow - 3600) < 600, "expires an hour after it was put")
        }
        // An hour and a minute later (a clock the test controls), the entry has expired.
        let later = try BlobCache(directory: dir.path, configuration: .testing(clock: ManualClock(start: Date().addingTimeInterval(3660))))
        #expect(later.openReport.expiredAtOpen == 1)
        #expect(try later.contains("t") == false)
        try later.close()
        #expect(try cli.run(["clear"]).output == "removed 2 entries\n")
        #expect(try cli.run(["get", "p"]).stdout == Data([7]))
        #expect(try cli.run(["clear", "--include-pinned"]).output == "removed 1 entries\n")
        #expect(try cli.run(["put", "bad", "--codec", "zstd"], stdin: Data([1])).status == 64)
    }

    @Test("a command that exits before reading a large input reports its status, one line on stderr")
    func exitBeforeReadingInput() throws {
        let dir = TemporaryDirectory()
        let result = try CLI(directory: dir.path).run(["put", "k", "--codec", "zstd"], stdin: Data(count: 1 << 20))
        #expect(result.status == 64 && result.stderr.contains("unknown codec 'zstd'"), "\(result.stderr)")
        #expect(try BlobCache(directory: dir.path).keys().isEmpty)
    }

    @Test("--compression picks a preset: fast-reads stores a large value raw, a small one with LZ4; balanced a large one with LZ4, as adaptive (the default) does not when it saves under 3/4; a bad name exits 64")
    func compressionPresets() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        #expect(try cli.run(["--compression", "fast-reads", "put", "large"], stdin: Data(Samples.compressible(300_000))).status == 0)
        #expect(try cli.run(["--compression", "fast-reads", "put", "small"], stdin: Data(Samples.compressible(3_000))).status == 0)
        #expect(try cli.run(["--compression", "balanced", "put", "balanced"], stdin: Data(Samples.compressible(300_000, seed: 3))).status == 0)
        #expect(try cli.run(["--compression", "adaptive", "put", "adaptive"], stdin: Data(Samples.compressible(300_000, seed: 4))).status == 0)
        #expect(try cli.run(["put", "default"], stdin: Data(Samples.compressible(300_000, seed: 2))).status == 0)
        let entries = try BlobCache(directory: dir.path).entries()
        #expect(entries.first { $0.key == "large" }?.codec == "none")
        #expect(entries.first { $0.key == "small" }?.codec == "lz4")
        #expect(entries.first { $0.key == "balanced" }?.codec == "lz4")
        #expect(entries.first { $0.key == "adaptive" }?.codec == "none", "LZ4 saves about 59% of it")
        #expect(entries.first { $0.key == "default" }?.codec == "none", "LZ4 saves about 59% of it")
        let bad = try cli.run(["--compression", "zstd", "put", "x"], stdin: Data([1]))
        #expect(bad.status == 64 && bad.stderr.contains("unknown compression preset 'zstd'") && bad.stderr.contains("adaptive"))
    }

    @Test("rm exits 0 when every key existed and 1 when some did not")
    func remove() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        for key in ["a", "b", "c"] { try cli.run(["put", key], stdin: Data(key.utf8)) }
        #expect(try cli.run(["rm", "a", "b"]).status == 0)
        let partly = try cli.run(["rm", "c", "zz"])
        #expect(partly.status == 1)
        #expect(try cli.run(["get", "c"]).status == 1)
    }

    @Test("ls escapes tab, newline and backslash; --json keeps keys as they are")
    func list() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        try cli.run(["put", "plain"], stdin: Data("1".utf8))
        try cli.run(["put", "a\tb\nc\\d"], stdin: Data("22".utf8))
        let rows = try cli.run(["ls"]).lines.map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows.count == 2)
        #expect(rows.map { $0[0] } == ["plain", "a\\tb\\nc\\\\d"])
        #expect(rows.allSatisfy { $0.count == 6 && $0[1].count == 32 && $0[4] == "never" })
        #expect(rows[1][2] == "2")
        let json = try JSONSerialization.jsonObject(with: try cli.run(["ls", "--json"]).stdout) as! [[String: Any]]
        #expect(json.map { $0["key"] as? String } == ["plain", "a\tb\nc\\d"])
        #expect(Set(json[0].keys).isSuperset(of: ["key", "blob", "size", "storedSize", "lastAccess"]))
    }

    @Test("stat reports entries, blobs, bytes, ratio, dedup, journal and limits, as text and JSON")
    func stat() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        let value = Data(Samples.compressible(10_000))
        try cli.run(["put", "a"], stdin: value)
        try cli.run(["put", "b"], stdin: value)
        let text = try cli.run(["stat"]).output
        for label in ["entries:", "blobs:", "logical bytes:", "stored bytes:", "compression ratio:", "dedup savings:", "journal:", "max size:"] {
            #expect(text.contains(label), "\(label)")
        }
        let json = try JSONSerialization.jsonObject(with: try cli.run(["stat", "--json"]).stdout) as! [String: Any]
        #expect(json["entries"] as? Int == 2 && json["blobs"] as? Int == 1)
        #expect(json["deduplicationSavings"] as? Int == 10_000)
        #expect(json["schemaVersion"] as? Int == 1)
        #expect((json["lifetime"] as? [String: Any])?["sets"] as? Int == 2, "counters persist across invocations")
    }

    @Test("--namespace isolates keys for put, get, rm, ls and clear; ls --namespaces and stat show their figures and statistics")
    func namespaces() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        #expect(try cli.run(["put", "k"], stdin: Data("own".utf8)).status == 0)
        #expect(try cli.run(["--namespace", "thumbs", "put", "k"], stdin: Data("thumb".utf8)).status == 0)
        #expect(try cli.run(["put", "j", "--namespace", "thumbs"], stdin: Data("own".utf8)).status == 0)
        #expect(try cli.run(["get", "k"]).output == "own")
        #expect(try cli.run(["--namespace", "thumbs", "get", "k"]).output == "thumb")
        #expect(try cli.run(["ls"]).output.hasPrefix("k\t") && cli.run(["ls"]).output.split(separator: "\n").count == 1)
        #expect(try cli.run(["--namespace", "thumbs", "ls"]).output.split(separator: "\n").map { $0.prefix(2) } == ["j\t", "k\t"], "least recently used first")
        #expect(try cli.run(["ls", "--namespaces"]).output.hasPrefix("thumbs\t2\t2\t"))
        let stat = try JSONSerialization.jsonObject(with: cli.run(["stat", "--json"]).stdout) as? [String: Any]
        let statistics = stat?["lifetime"] as? [String: Any]
        #expect(statistics?["hits"] as? Int == 2 && statistics?["sets"] as? Int == 3 && statistics?["deduplicatedSets"] as? Int == 1)
        #expect((stat?["namespaces"] as? [String: [String: Int]])?["thumbs"]?["entries"] == 2)
        #expect(try cli.run(["stat"]).output.contains("namespace thumbs: 2 entries"))
        #expect(try cli.run(["--namespace", "thumbs", "rm", "j"]).status == 0)
        #expect(try cli.run(["--namespace", "thumbs", "clear"]).output == "removed 1 entries\n")
        #expect(try cli.run(["get", "k"]).output == "own", "the cache's own keys are untouched")
        let bad = try cli.run(["--namespace", "", "get", "k"])
        #expect(bad.status == 2 && bad.stderr.split(separator: "\n").count == 1)
    }

    @Test("import stores a tree under prefix + relative path; export writes it back, refusing escaping keys")
    func importExport() throws {
        let dir = TemporaryDirectory()
        let source = dir.appending("src")
        try FileManager.default.createDirectory(atPath: source + "/sub/deeper", withIntermediateDirectories: true)
        writeFile(source + "/one.txt", Array("one".utf8))
        writeFile(source + "/sub/two.bin", Samples.random(5000))
        writeFile(source + "/sub/deeper/three", Samples.compressible(70_000))
        let cli = CLI(directory: dir.appending("cache"))
        let imported = try cli.run(["import", source, "--prefix", "p/"])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try cli.run(["get", "p/sub/two.bin"]).stdout == Data(Samples.random(5000)))
        try cli.run(["put", "../escape"], stdin: Data([1]))
        let export = try cli.run(["export", dir.appending("out")])
        #expect(export.status == 2)
        #expect(export.stderr.contains("../escape"))
        #expect(readFile(dir.appending("out/p/sub/deeper/three")) == Samples.compressible(70_000))
        #expect(readFile(dir.appending("out/p/one.txt")) == Array("one".utf8))
        #expect(!FileManager.default.fileExists(atPath: dir.appending("escape")))
        #expect(try cli.run(["import", dir.appending("absent")]).status == 2)
    }

    @Test("expire, evict --to and config (saved limits apply to later opens)")
    func maintenance() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        do {
            // Set under a clock in 1970, so it is long expired by the real clock the tool reads.
            let past = try BlobCache(directory: dir.path, configuration: .testing(clock: ManualClock(start: Date(timeIntervalSince1970: 1_000_000))))
            try past.set([1], forKey: "soon", expiry: .after(.seconds(60)))
            try past.close()
        }
        for n in 0..<10 { try cli.run(["put", "k\(n)"], stdin: Data(Samples.random(10_000, seed: UInt64(n)))) }
        // Every open drops expired entries, so by the time `expire` runs, `soon` is gone already.
        let expire = try cli.run(["expire"])
        #expect(expire.status == 0 && expire.output == "removed 0 expired entries\n")
        #expect(try cli.run(["get", "soon"]).status == 1)
        let evict = try cli.run(["evict", "--to", "50k"])
        #expect(evict.status == 0 && evict.output.hasPrefix("evicted 6 entries"))
        #expect(try cli.run(["get", "k0"]).status == 1)
        #expect(try cli.run(["get", "k9"]).status == 0)
        // Lowering a cap below what the cache holds evicts only with --yes (saying how much).
        #expect(try cli.run(["config", "--max-entries", "2", "--max-size", "1Mi"]).status == 64)
        let lowered = try cli.run(["config", "--max-entries", "2", "--max-size", "1Mi", "--yes"])
        #expect(lowered.status == 0 && lowered.lines.last?.hasPrefix("evicted: 2 entries") == true)
        #expect(try cli.run(["config"]).output == "max-size: 1048576\nmax-entries: 2\n")
        #expect(try BlobCache.defaultLimits(in: dir.path) == .init(maxStoredBytes: 1_048_576, maxEntries: 2))
        try cli.run(["put", "new"], stdin: Data([2]))
        #expect(try cli.run(["ls"]).lines.count == 2)
        #expect(try cli.run(["config", "--max-entries", "none"]).output == "max-size: 1048576\nmax-entries: none\n")
    }

    @Test("bad input is a one-line error and a non-zero exit, and costs no stored data")
    func badInput() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        try cli.run(["put", "keep"], stdin: Data([42]))
        let file = dir.appending("file")
        writeFile(file, [1])
        let cases: [([String], Int32)] = [
            (["frobnicate"], 64),
            (["get"], 64),
            (["put", "k", "--bogus"], 64),
            (["put", ""], 64),
            (["put", "k", dir.appending("does-not-exist")], 2),
            (["evict", "--to", "lots"], 64),
            (["--dir", file, "ls"], 8),
        ]
        for (arguments, status) in cases {
            let result = try cli.run(arguments)
            #expect(result.status == status, "\(arguments)")
            #expect(!result.stderr.isEmpty, "\(arguments)")
        }
        let unreadable = dir.appending("locked")
        try FileManager.default.createDirectory(atPath: unreadable, withIntermediateDirectories: false)
        chmod(unreadable, 0)
        defer { chmod(unreadable, 0o755) }
        if getuid() != 0 { #expect(try CLI(directory: unreadable).run(["ls"]).status == 8) }
        #expect(try cli.run(["get", "keep"]).stdout == Data([42]))
        #expect(readFile(file) == [1])
    }

    @Test("with --wait 0, every command that opens the cache exits 8 naming the directory while a script holds DIR/lock")
    func inUse() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        try cli.run(["put", "k"], stdin: Data([1]))
        // flock(1) holds the lock until its command reads end of input.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        holder.arguments = [dir.appending("lock"), "sh", "-c", "echo held; cat > /dev/null"]
        let out = Pipe(), input = Pipe()
        holder.standardOutput = out
        holder.standardInput = input
        try holder.run()
        #expect(String(decoding: out.fileHandleForReading.availableData, as: UTF8.self) == "held\n")
        defer { try? input.fileHandleForWriting.close(); holder.waitUntilExit() }
        for arguments in [["put", "x"], ["get", "k"], ["rm", "k"], ["ls"], ["stat"], ["expire"], ["evict", "--to", "1k"],
                          ["clear"], ["fsck"], ["compact"], ["import", dir.path], ["export", dir.appending("x")],
                          ["config", "--max-entries", "3"]] {
            let result = try cli.run(["--wait", "0"] + arguments, stdin: Data([1]))
            #expect(result.status == 8, "\(arguments)")
            #expect(result.stderr.contains(dir.path) && result.stderr.contains("in use"), "\(arguments)")
        }
    }
}
