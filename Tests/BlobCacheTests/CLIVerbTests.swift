import Foundation
import Testing
@testable import BlobCache

/// The verbs operators expect from ccache and git.
@Suite("blobcache: operators' verbs", .serialized, .disabled(if: underThreadSanitizer, childProcessesUnderTSan))
struct CLIVerbTests {
    @Test("--version prints the library's version; ls PREFIX lists the keys that start with it")
    func versionAndPrefix() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        let version = try cli.run(["--version"], withDir: false)
        #expect(version.status == 0 && version.output == BlobCache.version + "\n")
        for key in ["app/a", "app/b", "lib/c"] { #expect(try cli.run(["put", key], stdin: Data(key.utf8)).status == 0) }
        #expect(try cli.run(["ls", "app/"]).lines.map { $0.split(separator: "\t")[0] } == ["app/a", "app/b"])
        #expect(try cli.run(["ls", "nothing"]).lines.isEmpty)
        #expect(try cli.run(["ls"]).lines.count == 3)
    }

    @Test("evict --older-than evicts what was not used for that long, pinned entries never")
    func evictOlderThan() throws {
        let dir = TemporaryDirectory()
        let path = dir.appending("cache")
        do {
            // Used 2 days ago by the clock the entries were written with.
            let past = try BlobCache(directory: path, configuration: .testing(clock: ManualClock(start: Date().addingTimeInterval(-2 * 86_400))))
            try past.set([1], forKey: "old")
            try past.set([2], forKey: "old-pinned", pinned: true)
            try past.close()
        }
        let cli = CLI(directory: path)
        #expect(try cli.run(["put", "new"], stdin: Data([3])).status == 0)
        #expect(try cli.run(["evict", "--older-than", "3d"]).output.hasPrefix("evicted 0 entries"))
        let evicted = try cli.run(["evict", "--older-than", "1d"])
        #expect(evicted.status == 0 && evicted.output.hasPrefix("evicted 1 entries"))
        #expect(Set(try cli.run(["ls"]).lines.map { String($0.split(separator: "\t")[0]) }) == ["old-pinned", "new"])
        #expect(try cli.run(["evict", "--older-than", "yesterday"]).status == 64)
        #expect(try cli.run(["evict"]).status == 64)
    }

    @Test("stat --reset zeroes the statistics of every open, and keeps the entries")
    func statReset() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        #expect(try cli.run(["put", "k"], stdin: Data([1])).status == 0)
        #expect(try cli.run(["get", "k"]).status == 0)
        #expect(try cli.run(["get", "missing"]).status == 1)
        func statistics() throws -> [String: Any] {
            let json = try JSONSerialization.jsonObject(with: try cli.run(["stat", "--json"]).stdout) as? [String: Any]
            return json?["lifetime"] as? [String: Any] ?? [:]
        }
        #expect(try statistics()["hits"] as? Int == 1 && statistics()["sets"] as? Int == 1)
        #expect(try cli.run(["stat", "--reset"]).status == 0)
        let after = try statistics()
        #expect(after["hits"] as? Int == 0 && after["misses"] as? Int == 0 && after["sets"] as? Int == 0)
        #expect(try cli.run(["get", "k"]).stdout == Data([1]))
    }

    @Test("export --prefix P writes the keys under P without it; import --prefix P of that tree gives them back")
    func exportPrefix() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        for key in ["shims/lz4/a.h", "shims/z/b.h", "other/c"] { #expect(try cli.run(["put", key], stdin: Data(key.utf8)).status == 0) }
        let out = dir.appending("out")
        let exported = try cli.run(["export", out, "--prefix", "shims/"])
        #expect(exported.status == 0 && exported.output.hasPrefix("exported 2 entries"))
        #expect(readFile(out + "/lz4/a.h") == Array("shims/lz4/a.h".utf8))
        #expect(!FileManager.default.fileExists(atPath: out + "/other"))
        let copy = CLI(directory: dir.appending("copy"))
        #expect(try copy.run(["import", out, "--prefix", "shims/"]).status == 0)
        #expect(try copy.run(["get", "shims/z/b.h"]).stdout == Data("shims/z/b.h".utf8))
    }

    @Test("export tells keys apart by their bytes: a key is not 'under' a canonically equivalent key's file")
    func exportByBytes() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        #expect(try cli.run(["put", "caf\u{E9}"], stdin: Data("file".utf8)).status == 0)
        #expect(try cli.run(["put", "cafe\u{301}/x"], stdin: Data("under another name".utf8)).status == 0)
        let out = dir.appending("out")
        let exported = try cli.run(["export", out])
        #expect(exported.status == 0 && exported.output.hasPrefix("exported 2 entries"), "\(exported.stderr)")
        #expect(readFile(out + "/cafe\u{301}/x") == Array("under another name".utf8))
    }

    @Test("import says how many symbolic links and special files it skipped")
    func importCountsSkips() throws {
        let dir = TemporaryDirectory()
        let tree = dir.appending("tree")
        try FileManager.default.createDirectory(atPath: tree, withIntermediateDirectories: true)
        writeFile(tree + "/file", [1])
        #expect(symlink("/etc/hostname", tree + "/link") == 0 && mkfifo(tree + "/fifo", 0o600) == 0)
        let imported = try CLI(directory: dir.appending("cache")).run(["import", tree])
        #expect(imported.status == 0)
        #expect(imported.output.contains("imported 1 files") && imported.output.contains("skipped 1 symbolic link")
                && imported.output.contains("1 pipe, socket or device"), "\(imported.output)")
    }
}
