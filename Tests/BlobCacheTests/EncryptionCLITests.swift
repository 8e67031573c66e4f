import Crypto
import Foundation
import Testing
@testable import BlobCache

/// `--key-file`, `$BLOBCACHE_KEY_FILE`, exit 9 and `compact --rekey`, as a user runs them.
@Suite("blobcache with encryption", .serialized, .disabled(if: underThreadSanitizer, childProcessesUnderTSan))
struct EncryptionCLITests {
    @Test("a key file of raw bytes or hex opens the cache; no key, another key or a bad file exits 9 with one line; nothing in plain text")
    func keyFiles() throws {
        let dir = TemporaryDirectory()
        let cache = dir.appending("cache")
        let cli = CLI(directory: cache)
        let raw = dir.appending("raw.key"), hex = dir.appending("hex.key"), other = dir.appending("other.key")
        let bad = dir.appending("bad.key")
        let key = (0..<32).map { UInt8($0 * 7 % 256) }
        writeFile(raw, key)
        writeFile(hex, Array((key.map { String(format: "%02X", $0) }.joined() + "\n").utf8))
        writeFile(other, [UInt8](repeating: 9, count: 32))
        writeFile(bad, Array("not a key\n".utf8))
        for file in [raw, hex, other, bad] { chmod(file, 0o600) }
        let value = Data("the distinctive plain text of a value, long enough to find".utf8)

        #expect(try cli.run(["--key-file", raw, "put", "distinctive-cli-key"], stdin: value).status == 0)
        #expect(try cli.run(["get", "distinctive-cli-key", "--key-file", hex]).stdout == value)
        let fromEnvironment = try cli.run(["--dir", cache, "get", "distinctive-cli-key"],
                                          environment: ["BLOBCACHE_KEY_FILE": raw], withDir: false)
        #expect(fromEnvironment.stdout == value)
        for file in regularFiles(under: cache).values {
            #expect(Data(file).range(of: value.prefix(20)) == nil && Data(file).range(of: Data("distinctive-cli-key".utf8)) == nil)
        }
        let before = regularFiles(under: cache)
        for arguments in [["get", "distinctive-cli-key"], ["--key-file", other, "get", "distinctive-cli-key"],
                          ["--key-file", bad, "get", "distinctive-cli-key"], ["--key-file", dir.appending("missing.key"), "ls"],
                          ["--key-file", other, "fsck"], ["--key-file", other, "compact", "--rekey", raw]] {
            let result = try cli.run(arguments)
            #expect(result.status == 9 && result.stdout.isEmpty && result.stderr.split(separator: "\n").count == 1, "\(arguments)")
        }
        #expect(regularFiles(under: cache) == before)
        // fsck without the key: exit 0, and a note of what it could not check.
        let unkeyed = try cli.run(["fsck"])
        #expect(unkeyed.status == 0 && unkeyed.output.contains("encrypted-unchecked"))
        // A key from a pipe (`--key-file <(pass show …)`), which has no size to stat.
        let fifo = dir.appending("key.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let writer = Thread {
            let handle = FileHandle(forWritingAtPath: fifo)   // blocks until the command opens it
            handle?.write(Data(key))
            try? handle?.close()
        }
        writer.start()
        #expect(try cli.run(["--key-file", fifo, "get", "distinctive-cli-key"]).stdout == value)
        // A key file others may read is refused, saying which mode to set, and nothing changes.
        chmod(raw, 0o644)
        let exposed = try cli.run(["--key-file", raw, "get", "distinctive-cli-key"])
        #expect(exposed.status == 9 && exposed.stderr.contains("chmod 600") && exposed.stdout.isEmpty)
        chmod(raw, 0o600)
        // A key for a plain cache is refused too.
        let plain = CLI(directory: dir.appending("plain"))
        #expect(try plain.run(["put", "k"], stdin: Data([1])).status == 0)
        #expect(try plain.run(["--key-file", raw, "get", "k"]).status == 9)
    }

    @Test("compact --rekey moves the cache to the new key; a plain cache is encrypted by it")
    func rekey() throws {
        let dir = TemporaryDirectory()
        let cache = dir.appending("cache")
        let cli = CLI(directory: cache)
        let first = dir.appending("first.key"), second = dir.appending("second.key")
        writeFile(first, [UInt8](repeating: 1, count: 32))
        writeFile(second, [UInt8](repeating: 2, count: 32))
        for file in [first, second] { chmod(file, 0o600) }
        let large = Data(Samples.random(200_000, seed: 9)), small = Data("small value".utf8)
        #expect(try cli.run(["put", "large"], stdin: large).status == 0)
        #expect(try cli.run(["put", "small"], stdin: small).status == 0)
        let encrypt = try cli.run(["compact", "--rekey", first])
        #expect(encrypt.status == 0 && encrypt.output.contains("blobs rekeyed: 2"))
        #expect(try cli.run(["get", "large"]).status == 9)
        #expect(try cli.run(["--key-file", first, "get", "large"]).stdout == large)
        let rekeyed = try cli.run(["--key-file", first, "compact", "--rekey", second, "--json"])
        #expect(rekeyed.status == 0 && rekeyed.output.contains("\"blobsRekeyed\""))
        #expect(try cli.run(["--key-file", first, "get", "small"]).status == 9)
        #expect(try cli.run(["--key-file", second, "get", "small"]).stdout == small)
        #expect(try cli.run(["--key-file", second, "get", "large"]).stdout == large)
        let fsck = try cli.run(["--key-file", second, "fsck"])
        #expect(fsck.status == 0 && !fsck.output.contains("dangling"))
    }

    @Test("a real SIGKILL at a different moment of compact --rekey each round: the old key or the new key works, never neither",
          arguments: 0..<7)
    func killedDuringRekey(round: Int) throws {
        let dir = TemporaryDirectory()
        let cache = dir.appending("cache")
        let oldKeyFile = dir.appending("old.key"), newKeyFile = dir.appending("new.key")
        let oldKey = [UInt8](repeating: 0x42, count: 32), newKey = (0..<32).map { UInt8(truncatingIfNeeded: $0 * 11 + 5) }
        writeFile(oldKeyFile, oldKey)
        writeFile(newKeyFile, newKey)
        for file in [oldKeyFile, newKeyFile] { chmod(file, 0o600) }
        func configuration(_ key: [UInt8]) -> BlobCache.Configuration {
            .testing { $0.encryption = .aesGCM(key: SymmetricKey(data: key)) }
        }
        var expected: [String: [UInt8]] = [:]
        do {
            let store = try BlobCache(directory: cache, configuration: configuration(oldKey))
            for n in 0..<300 {
                let value = Samples.random(n % 6 == 0 ? 70_000 + n : 300 + n, seed: UInt64(n))   // loose (over 64 KiB) and packed
                try store.set(value, forKey: "k\(n)")
                expected["k\(n)"] = value
            }
            try store.close()
        }
        let looseBefore = filesBelow(cache + "/objects").count
        let process = Process()
        process.executableURL = ChildProcess.productsDirectory.appendingPathComponent("blobcache")
        process.arguments = ["--dir", cache, "--key-file", oldKeyFile, "compact", "--rekey", newKeyFile]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Each round waits for a later stage of the rekey, seen in the file system, then lets
        // it run a while longer (no sleeps; nothing checked depends on where it lands):
        // 0 at once; 1-2 while blobs are rewritten under the new key (more loose files than
        // before); 3-4 once the new journal is being written (journal.tmp); 5-6 after the
        // commit (journal.tmp gone again), in the compaction that deletes the old blobs.
        var generator = SeededGenerator(seed: UInt64(100 + round))
        let spins = round < 3 ? round - 1 : Int(generator.next() % 400)   // rounds 1-2: the rewrite is quick
        func waitFor(_ condition: () -> Bool) { while process.isRunning && !condition() {} }
        let journalTemporary = cache + "/journal.tmp"
        switch round {
        case 0: break
        case 1, 2: waitFor { filesBelow(cache + "/objects").count > looseBefore }
        case 3, 4: waitFor { FileManager.default.fileExists(atPath: journalTemporary) }
        default:
            waitFor { FileManager.default.fileExists(atPath: journalTemporary) }
            waitFor { !FileManager.default.fileExists(atPath: journalTemporary) }
        }
        if spins > 0 { for _ in 0..<spins where process.isRunning { _ = FileManager.default.fileExists(atPath: journalTemporary) } }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()

        // Exactly one key opens the cache, and with it every value reads back and fsck is clean.
        let working: [UInt8]
        do {
            try BlobCache(directory: cache, configuration: configuration(oldKey)).close()
            working = oldKey
        } catch BlobCacheError.wrongEncryptionKey {
            working = newKey
        }
        let other = working == oldKey ? newKey : oldKey
        print("rekey killed in round \(round): the \(working == oldKey ? "old" : "new") key works")
        #expect(throws: BlobCacheError.self) { try BlobCache(directory: cache, configuration: configuration(other)) }
        let reopened = try BlobCache(directory: cache, configuration: configuration(working))
        #expect(try reopened.keys().count == expected.count)
        for (key, value) in expected { #expect(try reopened.bytes(forKey: key) == value, "round \(round): \(key)") }
        try reopened.close()
        let fsck = try CLI(directory: cache).run(["--key-file", working == oldKey ? oldKeyFile : newKeyFile, "fsck"])
        #expect(fsck.status == 0, "round \(round): \(fsck.output)")
    }
}
