import Foundation
import Testing
@testable import BlobCache

@Suite("blobcache: content identity and exact keys", .serialized, .disabled(if: underThreadSanitizer, childProcessesUnderTSan))
struct ContentIdentityCLITests {
    @Test("put key-a a.bin, put key-b b.bin with the public MD5 pair: the second exits 2 naming the id; each key reads its own; fsck 0")
    func collisionPair() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        writeFile(dir.appending("a.bin"), CollisionPair.a)
        writeFile(dir.appending("b.bin"), CollisionPair.b)
        #expect(try cli.run(["put", "key-a", dir.appending("a.bin")]).output == CollisionPair.id + "\n")
        let second = try cli.run(["put", "key-b", dir.appending("b.bin")])
        #expect(second.status == 2 && second.stdout.isEmpty)
        #expect(second.stderr.split(separator: "\n").count == 1 && second.stderr.contains(CollisionPair.id))
        #expect(try cli.run(["get", "key-a"]).stdout == Data(CollisionPair.a))
        let missing = try cli.run(["get", "key-b"])
        #expect(missing.status == 1 && missing.stdout.isEmpty)
        #expect(try cli.run(["fsck"]).status == 0)
        let stat = try cli.run(["stat", "--json"])
        let statistics = try #require(try JSONSerialization.jsonObject(with: stat.stdout) as? [String: Any])["lifetime"] as? [String: Any]
        #expect(statistics?["contentCollisions"] as? Int == 1)
    }

    /// Runs `blobcache --dir DIR` with a shell building the arguments, so that they can hold
    /// bytes that are not UTF-8 (a `Process` takes Swift strings, which cannot).
    private func shell(_ cli: CLI, _ script: String) throws -> CLI.Result {
        let tool = ChildProcess.productsDirectory.appendingPathComponent("blobcache").path
        return try CLI(directory: cli.directory).runProgram("/bin/sh", ["-c", "B=\"$0\"; D=\"$1\"; " + script, tool, cli.directory])
    }

    @Test("a KEY that is not valid UTF-8: put exits 64 and stores nothing; get and rm of another such key are misses")
    func keysThatAreNotUTF8() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        #expect(try cli.run(["put", "seed"], stdin: Data([1])).status == 0)
        let put = try shell(cli, #"printf v | "$B" --dir "$D" put "$(printf '\377')""#)
        #expect(put.status == 64)
        #expect(put.stderr.split(separator: "\n").count == 1 && put.stderr.contains("UTF-8"))
        let get = try shell(cli, #""$B" --dir "$D" get "$(printf '\376')""#)
        #expect(get.status == 1 && get.stdout.isEmpty)
        #expect(try shell(cli, #""$B" --dir "$D" rm "$(printf '\376')""#).status == 1)
        #expect(try shell(cli, #""$B" --dir "$D" --namespace "$(printf '\377')" ls"#).status == 64)
        #expect(try cli.run(["ls"]).lines.count == 1, "only the key put before")
        // A U+FFFD the user typed is a key like any other.
        #expect(try cli.run(["put", "\u{FFFD}"], stdin: Data([2])).status == 0)
        #expect(try cli.run(["get", "\u{FFFD}"]).stdout == Data([2]))
    }
}

extension CLI {
    /// Runs `program` with `arguments`, capturing both outputs.
    func runProgram(_ program: String, _ arguments: [String]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: stdout, stderr: String(decoding: stderr, as: UTF8.self))
    }
}
