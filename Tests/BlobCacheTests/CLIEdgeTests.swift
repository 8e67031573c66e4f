import Foundation
import Testing
@testable import BlobCache

/// `ls` and `export` at their edges: keys judged by bytes and scalars, not
/// by `Character`s; every key exported that can be.
@Suite("CLI edges", .disabled(if: underThreadSanitizer, childProcessesUnderTSan))
struct CLIEdgeTests {
    @Test("ls escapes every C0 control and DEL, so no key breaks a line or reaches the terminal raw")
    func listEscapesControls() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        let key = "a\r\nb\u{1b}[31mc\u{7f}d\u{1}"
        try cli.run(["put", key], stdin: Data([1]))
        let listing = try cli.run(["ls"])
        #expect(listing.lines.count == 1, "\(listing.output)")
        let shown = String(listing.lines[0].split(separator: "\t")[0])
        #expect(shown == "a\\r\\nb\\x1b[31mc\\x7fd\\x01")
        #expect(!listing.output.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" && $0 != "\n" || $0.value == 0x7f })
        #expect(BlobCache.escapedKey("é\u{301}/x") == "é\u{301}/x")
        #expect(BlobCache.escapedKey("a\u{9b}31m\u{85}b\u{202e}c\u{2028}") == "a\\u{9b}31m\\u{85}b\\u{202e}c\\u{2028}")
    }

    @Test("export writes every key it can, skips the rest one line each (exit 2), and never writes outside DIR")
    func exportHostileKeys() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        let good = ["good/one": [UInt8]([1]), "a": [2], "dots/.../name": [3]]
        for (key, value) in good { try cli.run(["put", key], stdin: Data(value)) }
        let hostile = ["../\u{301}x",                        // '/' + combining mark is one Character
                       "a/b",                                 // under the file of key "a"
                       "long/" + String(repeating: "n", count: 300),
                       "x/./y", "/abs"]
        for key in hostile { try cli.run(["put", key], stdin: Data([9])) }
        let damaged = Samples.random(100_000, seed: 4)
        try cli.run(["put", "damaged"], stdin: Data(damaged))
        flipByte(looseFile(dir.appending("cache"), BlobID(hashing: damaged)), at: 5000)

        let destination = dir.appending("out/dest")
        let export = try cli.run(["export", destination])
        #expect(export.status == 2, "\(export.stderr)")
        let complaints = export.stderr.split(separator: "\n")
        #expect(complaints.count == hostile.count + 1, "\(export.stderr)")
        #expect(export.output.contains("skipped \(hostile.count + 1)"), "\(export.output)")
        for (key, value) in good { #expect(readFile(destination + "/" + key) == value, "\(key)") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.appending("out")) == ["dest"])
    }

    @Test("export never writes through a symbolic link planted in the destination, file or directory")
    func exportRefusesLinks() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        for key in ["linked/file", "target", "plain/ok"] { try cli.run(["put", key], stdin: Data(key.utf8)) }
        let outside = dir.appending("outside"), destination = dir.appending("dest")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
        writeFile(outside + "/victim", [7, 7, 7])
        try FileManager.default.createSymbolicLink(atPath: destination + "/linked", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: destination + "/target", withDestinationPath: outside + "/victim")

        let export = try cli.run(["export", destination])
        #expect(export.status == 2, "\(export.stderr)")
        #expect(export.stderr.split(separator: "\n").count == 2, "\(export.stderr)")
        #expect(export.output.contains("exported 1 entries") && export.output.contains("skipped 2"), "\(export.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside) == ["victim"], "nothing written through the link")
        #expect(readFile(outside + "/victim") == [7, 7, 7], "the linked file is untouched")
        #expect(readFile(destination + "/plain/ok") == Array("plain/ok".utf8))
    }

    @Test("export splits a key at every '/' byte, also one a combining mark follows, and never follows a link there")
    func exportSplitsAtBytes() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.appending("cache"))
        let plain = "d/\u{301}x", linked = "l/\u{301}y"   // "/\u{301}" is one Character, two components
        for key in [plain, linked] { try cli.run(["put", key], stdin: Data(key.utf8)) }
        let outside = dir.appending("outside"), destination = dir.appending("dest")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: destination + "/l", withDestinationPath: outside)

        let export = try cli.run(["export", destination])
        #expect(export.status == 2, "\(export.stderr)")
        #expect(export.output.contains("exported 1 entries") && export.output.contains("skipped 1"), "\(export.output)")
        #expect(readFile(destination + "/" + plain) == Array(plain.utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty, "nothing written through the link")
    }

    @Test("export writes a deep tree of many keys exactly, whichever core takes which key")
    func exportManyKeys() throws {
        let dir = TemporaryDirectory()
        let source = dir.appending("tree")
        var expected: [String: [UInt8]] = [:]
        for n in 0..<300 {
            let key = "d\(n % 7)/e\(n % 5)/f\(n % 3)/file-\(n)"
            expected[key] = Samples.random(n * 37 % 5000, seed: UInt64(n))
            try FileManager.default.createDirectory(atPath: source + "/" + (key as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            writeFile(source + "/" + key, expected[key]!)
        }
        let cli = CLI(directory: dir.appending("cache"))
        #expect(try cli.run(["import", source]).status == 0)
        let export = try cli.run(["export", dir.appending("out")])
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.output.contains("exported 300 entries"), "\(export.output)")
        for (key, value) in expected { #expect(readFile(dir.appending("out") + "/" + key) == value, "\(key)") }
    }

    @Test("import takes every regular file (hidden, empty, deep), no link, and a later PATH's file for a key named twice")
    func importTree() throws {
        let dir = TemporaryDirectory()
        let first = dir.appending("first"), second = dir.appending("second"), outside = dir.appending("outside")
        for folder in [first + "/a/b/c", second + "/a", outside] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        writeFile(first + "/a/b/c/deep", Samples.random(70_000, seed: 1))
        writeFile(first + "/.hidden", [1])
        writeFile(first + "/empty", [])
        writeFile(first + "/a/same", [2])
        writeFile(second + "/a/same", [3])
        writeFile(outside + "/secret", [4])
        try FileManager.default.createSymbolicLink(atPath: first + "/link-to-file", withDestinationPath: outside + "/secret")
        try FileManager.default.createSymbolicLink(atPath: first + "/link-to-dir", withDestinationPath: outside)
        #expect(mkfifo(first + "/pipe", 0o600) == 0)

        let cli = CLI(directory: dir.appending("cache"))
        let imported = try cli.run(["import", first, second])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.output.hasPrefix("imported 4 files, 70002 bytes;"), "\(imported.output)")
        #expect(try cli.run(["ls"]).lines.map { String($0.split(separator: "\t")[0]) }.sorted()
                == [".hidden", "a/b/c/deep", "a/same", "empty"])
        #expect(try cli.run(["get", "a/same"]).stdout == Data([3]))
        #expect(try cli.run(["get", "a/b/c/deep"]).stdout == Data(Samples.random(70_000, seed: 1)))
        #expect(try cli.run(["get", "empty"]).stdout.isEmpty)
    }

    @Test("import keeps keys that differ only in normalization apart, skips a name that is not UTF-8 (exit 2), and never opens a pipe it is given")
    func importOddNames() throws {
        let dir = TemporaryDirectory()
        let source = dir.appending("tree")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        writeFile(source + "/caf\u{e9}", [1])           // NFC
        writeFile(source + "/cafe\u{301}", [2])         // NFD: the same String, other bytes
        writeFile(source + "/plain", [3])
        let raw = Array((source + "/bad").utf8CString.dropLast()) + [CChar(bitPattern: 0xff), 0]
        let fd = open(raw, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        #expect(fd >= 0)
        close(fd)

        let cli = CLI(directory: dir.appending("cache"))
        let imported = try cli.run(["import", source])
        #expect(imported.status == 2, "\(imported.stderr)")
        #expect(imported.stderr.contains("bad\\xff") && imported.stderr.contains("not UTF-8"), "\(imported.stderr)")
        #expect(imported.output.contains("imported 3 files") && imported.output.contains("skipped 1"), "\(imported.output)")
        #expect(try cli.run(["get", "caf\u{e9}"]).stdout == Data([1]))
        #expect(try cli.run(["get", "cafe\u{301}"]).stdout == Data([2]))
        #expect(try cli.run(["get", "plain"]).stdout == Data([3]))

        let pipe = dir.appending("pipe")
        #expect(mkfifo(pipe, 0o600) == 0)
        let piped = try cli.run(["import", pipe])
        #expect(piped.status == 2, "\(piped.stderr)")
        #expect(piped.stderr.contains("not a regular file"), "\(piped.stderr)")
    }

    @Test("import stops at the first value the cache refuses: exit 2, one line, on whichever core meets it")
    func importStopsAtRefusal() throws {
        let dir = TemporaryDirectory()
        let source = dir.appending("tree")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        for n in 0..<40 { writeFile(source + "/small-\(n)", [UInt8(n)]) }
        for n in 0..<4 { writeFile(source + "/large-\(n)", Samples.random(50_000, seed: UInt64(n))) }
        let cli = CLI(directory: dir.appending("cache"))
        let imported = try cli.run(["--max-size", "20000", "import", source])
        #expect(imported.status == 2, "\(imported.stderr)")
        #expect(imported.stderr.split(separator: "\n").count == 1, "\(imported.stderr)")
        #expect(imported.stderr.hasPrefix("blobcache: "), "\(imported.stderr)")
    }
}
