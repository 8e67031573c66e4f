import Foundation
import Testing
@testable import BlobCache

/// The command line as Unix users expect it: no eviction a read asked for, `-` and `-o` as the
/// shell treats them, one line and exit 2 for every write error, no cache made by a read.
@Suite("blobcache: no surprises", .serialized, .disabled(if: underThreadSanitizer, childProcessesUnderTSan))
struct CLISurpriseTests {
    /// A cache with `count` entries, `k1` … `kN`.
    private func filled(_ dir: TemporaryDirectory, count: Int = 20) throws -> CLI {
        let cli = CLI(directory: dir.appending("cache"))
        for index in 1...count { #expect(try cli.run(["put", "k\(index)"], stdin: Data("value \(index)".utf8)).status == 0) }
        return cli
    }

    @Test("global caps on read-only and removing commands evict nothing")
    func capsNeverEvictOnReads() throws {
        let dir = TemporaryDirectory()
        let cli = try filled(dir)
        let reads: [[String]] = [["--max-entries", "5", "ls"], ["--max-size", "1k", "get", "k1"], ["--max-entries", "5", "stat"],
                                 ["--max-entries", "5", "export", dir.appending("out")], ["--max-entries", "5", "fsck"],
                                 ["--max-size", "1k", "expire"], ["--max-entries", "1", "rm", "k20"]]
        for arguments in reads {
            _ = try cli.run(arguments)
            let expected = arguments.last == "k20" ? 19 : 20
            #expect(try cli.run(["ls"]).lines.count == expected, "after \(arguments)")
        }
        // A command that fills the cache still applies them.
        #expect(try cli.run(["--max-entries", "5", "put", "new"], stdin: Data([1])).status == 0)
        #expect(try cli.run(["ls"]).lines.count == 5)
    }

    @Test("config lowering a cap says what it would evict and needs --yes; a global cap before config is refused")
    func configAsksFirst() throws {
        let dir = TemporaryDirectory()
        let cli = try filled(dir)
        let refused = try cli.run(["config", "--max-entries", "10"])
        #expect(refused.status == 64 && refused.stderr.contains("10 entries") && refused.stdout.isEmpty)
        #expect(try cli.run(["ls"]).lines.count == 20)
        #expect(try cli.run(["config"]).lines.contains("max-entries: none"))
        let global = try cli.run(["--max-size", "5M", "config"])
        #expect(global.status == 64 && global.stderr.split(separator: "\n").count == 1)
        #expect(try cli.run(["config"]).lines.contains("max-size: none"))
        let done = try cli.run(["config", "--max-entries", "10", "--yes"])
        #expect(done.status == 0 && done.lines.contains("max-entries: 10") && done.lines.contains { $0.hasPrefix("evicted: 10 entries") })
        #expect(try cli.run(["ls"]).lines.count == 10)
        // Raising it, or a cap the cache is within, evicts nothing and needs no --yes.
        #expect(try cli.run(["config", "--max-entries", "50"]).status == 0)
    }

    @Test("get -o writes as > does: mode, symbolic and hard links kept; a directory refused; a miss leaves the file alone")
    func outputFileAsTheShellWould() throws {
        let dir = TemporaryDirectory()
        let cli = try filled(dir, count: 1)
        let out = dir.appending("out")
        writeFile(out, Array("old contents, longer than the value".utf8))
        chmod(out, 0o600)
        #expect(try cli.run(["get", "k1", "-o", out]).status == 0)
        #expect(readFile(out) == Array("value 1".utf8))
        var info = stat()
        #expect(stat(out, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let link = dir.appending("link"), hard = dir.appending("hard")
        #expect(symlink(out, link) == 0 && Foundation.link(out, hard) == 0)
        #expect(try cli.run(["put", "k2"], stdin: Data("second".utf8)).status == 0)
        #expect(try cli.run(["get", "k2", "-o", link]).status == 0)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == out, "the link is still a link")
        #expect(readFile(out) == Array("second".utf8) && readFile(hard) == Array("second".utf8), "one file, two names")
        let missing = try cli.run(["get", "nope", "-o", out])
        #expect(missing.status == 1 && readFile(out) == Array("second".utf8))
        let directory = try cli.run(["get", "k1", "-o", dir.path])
        #expect(directory.status == 2 && directory.stderr.split(separator: "\n").count == 1)
        #expect(try cli.run(["get", "k1", "-o", "/dev/null"]).status == 0)
        #expect(try cli.run(["get", "k1", "-o", "-"]).stdout == Data("value 1".utf8))
        #expect(!FileManager.default.fileExists(atPath: FileManager.default.currentDirectoryPath + "/-"))
    }

    @Test("a write to a full device or a closed pipe: one line and exit 2, never a crash; with SIGPIPE at its default, a quiet death")
    func writeErrors() throws {
        let dir = TemporaryDirectory()
        let cli = try filled(dir, count: 3)
        for command in ["get k1", "get k1 -o /dev/full", "ls", "ls --json", "stat", "stat --json", "fsck"] {
            let result = try cli.runProgram("/bin/sh", ["-c", "exec \"$0\" --dir \"$1\" \(command) > /dev/full", tool, cli.directory])
            #expect(result.status == 2, "\(command)")
            #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("No space left on device"), "\(command): \(result.stderr)")
        }
        // Standard error full too: the message is lost, the exit code is not, and nothing traps.
        let noStderr = try cli.runProgram("/bin/sh", ["-c", "exec \"$0\" --dir \"$1\" get missing 2> /dev/full", tool, cli.directory])
        #expect(noStderr.status == 1)
        #expect(try cli.run(["put", "big"], stdin: Data(Samples.random(3 << 20))).status == 0)
        let ignored = try cli.runProgram("/bin/bash", ["-c", "trap '' PIPE; \"$0\" --dir \"$1\" get big | head -c 1 > /dev/null; exit ${PIPESTATUS[0]}", tool, cli.directory])
        #expect(ignored.status == 2 && ignored.stderr.contains("Broken pipe"))
        #expect(ignored.stderr.split(separator: "\n").count == 1)
        // (A shell cannot reset a signal ignored when it started, as a test runner may: env can.)
        let quiet = try cli.runProgram("/bin/bash", ["-c", "env --default-signal=PIPE \"$0\" --dir \"$1\" get big | head -c 1 > /dev/null; exit ${PIPESTATUS[0]}", tool, cli.directory])
        #expect(quiet.status == 128 + SIGPIPE && quiet.stderr.isEmpty)
    }

    @Test("- is standard input; /dev/null, a FIFO and <(cmd) are read like files")
    func anythingReadable() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        #expect(try cli.run(["put", "dash", "-"], stdin: Data("from stdin".utf8)).status == 0)
        #expect(try cli.run(["get", "dash"]).stdout == Data("from stdin".utf8))
        #expect(try cli.run(["put", "empty", "/dev/null"]).status == 0)
        let empty = try cli.run(["get", "empty"])
        #expect(empty.status == 0 && empty.stdout.isEmpty)
        let substituted = try cli.runProgram("/bin/bash", ["-c", "\"$0\" --dir \"$1\" put sub <(printf hi)", tool, cli.directory])
        #expect(substituted.status == 0)
        #expect(try cli.run(["get", "sub"]).stdout == Data("hi".utf8))
        let fifo = dir.appending("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let viaFIFO = try cli.runProgram("/bin/bash", ["-c", "printf piped > \"$2\" & \"$0\" --dir \"$1\" put fifo \"$2\"; wait", tool, cli.directory, fifo])
        #expect(viaFIFO.status == 0)
        #expect(try cli.run(["get", "fifo"]).stdout == Data("piped".utf8))
        let unreadable = try cli.run(["put", "x", dir.appending("missing")])
        #expect(unreadable.status == 2 && unreadable.stderr.contains("No such file or directory"))
    }

    @Test("read-only commands on a missing --dir exit 8 and create nothing")
    func missingDirectory() throws {
        let dir = TemporaryDirectory()
        let missing = dir.appending("no/such")
        let cli = CLI(directory: missing)
        for arguments in [["ls"], ["get", "k"], ["stat"], ["export", dir.appending("out")], ["fsck"]] {
            let result = try cli.run(arguments)
            #expect(result.status == 8 && result.stderr == "blobcache: no cache at \(missing)\n", "\(arguments)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appending("no")))
        #expect(try cli.run(["put", "k"], stdin: Data([1])).status == 0, "a command that writes creates it")
    }

    @Test("fsck --json: errorsLeft agrees with the exit code, before and after a repair")
    func fsckJSONConsistent() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        let value = Samples.random(100_000, seed: 3)
        #expect(try cli.run(["put", "big"], stdin: Data(value)).status == 0)
        flipByte(looseFile(dir.appending("cache"), BlobID(hashing: value)), at: 5000)
        func summary(_ arguments: [String]) throws -> (status: Int32, summary: [String: Any]) {
            let result = try cli.run(arguments)
            let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
            return (result.status, json?["summary"] as? [String: Any] ?? [:])
        }
        let check = try summary(["fsck", "--json"])
        #expect(check.status == 4 && check.summary["exitCode"] as? Int == 4)
        #expect(check.summary["errorsLeft"] as? Int == check.summary["errors"] as? Int && check.summary["errors"] as? Int ?? 0 > 0)
        let repair = try summary(["fsck", "--repair", "--json"])
        #expect(repair.status == 1 && repair.summary["errorsLeft"] as? Int == 0 && repair.summary["exitCode"] as? Int == 1)
    }

    private var tool: String { ChildProcess.productsDirectory.appendingPathComponent("blobcache").path }
}
