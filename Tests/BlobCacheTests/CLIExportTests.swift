import Foundation
import Testing
@testable import BlobCache

/// `export` on every core: every key written once with its bytes and the usual modes, whichever
/// core takes which directory; a failure part way skips only what it touches.
@Suite("blobcache export on every core", .disabled(if: underThreadSanitizer, childProcessesUnderTSan))
struct CLIExportTests {
    /// A tree of `count` files at several depths sharing directories, one directory holding
    /// more files than one core takes at a time; keys to bytes.
    private func makeTree(_ root: String, count: Int) throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for n in 0..<count {
            let key = switch n % 4 {
            case 0: "crowded/file-\(n)"
            case 1: "t\(n % 3)/u\(n % 5)/deep-\(n)"
            case 2: "t\(n % 3)/mid-\(n)"
            default: n % 40 == 3 ? "top-\(n)" : "t\(n % 3)/u\(n % 5)/v/w-\(n)"
            }
            files[key] = Samples.random(n * 53 % 9000, seed: UInt64(n) + 11)
            try FileManager.default.createDirectory(atPath: root + "/" + (key as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            writeFile(root + "/" + key, files[key]!)
        }
        return files
    }

    /// Every entry under `root`, relative, directories with a trailing `/`.
    private func listing(_ root: String) throws -> Set<String> {
        var found: Set<String> = []
        let enumerator = FileManager.default.enumerator(atPath: root)
        while let path = enumerator?.nextObject() as? String {
            let isDirectory = (enumerator?.fileAttributes?[.type] as? FileAttributeType) == .typeDirectory
            found.insert(isDirectory ? path + "/" : path)
        }
        return found
    }

    /// The permission bits of `path`.
    private func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int) ?? -1
    }

    /// This process's umask, which the CLI inherits (read, not set: setting it would race
    /// with other tests making files).
    private var umask: Int? {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }) else { return nil }
        return Int(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
    }

    @Test("export writes each of 400 keys exactly once, with its bytes, files 0666 and directories 0777 less the umask; again over its own output too")
    func everyKeyOnce() throws {
        let dir = TemporaryDirectory()
        let files = try makeTree(dir.appending("tree"), count: 400)
        let cli = CLI(directory: dir.appending("cache"))
        #expect(try cli.run(["import", dir.appending("tree")]).status == 0)
        let out = dir.appending("out")
        let expected = Set(files.keys).union(files.keys.flatMap { key -> [String] in
            let parts = key.split(separator: "/").dropLast()
            return parts.indices.map { parts[...$0].joined(separator: "/") + "/" }
        })
        for round in ["into a fresh directory", "over its own output"] {
            let export = try cli.run(["export", out])
            #expect(export.status == 0, "\(round): \(export.stderr)")
            #expect(export.output.hasPrefix("exported 400 entries"), "\(round): \(export.output)")
            #expect(try listing(out) == expected, "\(round): every key's file and directories, nothing else")
            for (key, value) in files { #expect(readFile(out + "/" + key) == value, "\(round): \(key)") }
            if let umask {
                #expect(files.keys.allSatisfy { mode(out + "/" + $0) == 0o666 & ~umask }, "\(round)")
                #expect(expected.filter { $0.hasSuffix("/") }.allSatisfy { mode(out + "/" + $0) == 0o777 & ~umask }, "\(round)")
            }
        }
    }

    @Test("a file where a shared directory goes: each key under it skipped one line (exit 2), every other key written, the file untouched")
    func collisionPartWay() throws {
        let dir = TemporaryDirectory()
        let files = try makeTree(dir.appending("tree"), count: 300)
        let cli = CLI(directory: dir.appending("cache"))
        #expect(try cli.run(["import", dir.appending("tree")]).status == 0)
        let out = dir.appending("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        writeFile(out + "/t1", [42])
        let blocked = files.keys.filter { $0.hasPrefix("t1/") }
        #expect(blocked.count > 50 && blocked.count < files.count / 2)

        let export = try cli.run(["export", out])
        #expect(export.status == 2, "\(export.stderr)")
        let lines = export.stderr.split(separator: "\n")
        #expect(lines.count == blocked.count, "\(export.stderr)")
        #expect(lines.allSatisfy { $0.hasPrefix("blobcache: skipping key 't1/") && $0.hasSuffix("cannot write it: Not a directory") },
                "\(export.stderr)")
        #expect(export.output == "exported \(files.count - blocked.count) entries to \(out), skipped \(blocked.count)\n",
                "\(export.output)")
        #expect(readFile(out + "/t1") == [42])
        for (key, value) in files where !key.hasPrefix("t1/") { #expect(readFile(out + "/" + key) == value, "\(key)") }
    }

    @Test("a value found damaged part way, where no file was before, leaves no file (nor a temporary one) behind")
    func damagedLeavesNothing() throws {
        let dir = TemporaryDirectory()
        let tree = dir.appending("tree"), cache = dir.appending("cache"), out = dir.appending("out")
        try FileManager.default.createDirectory(atPath: tree + "/sub", withIntermediateDirectories: true)
        let damaged = Samples.random(5_000_000, seed: 12)
        writeFile(tree + "/sub/damaged", damaged)
        writeFile(tree + "/sub/fine", [1, 2, 3])
        let cli = CLI(directory: cache)
        #expect(try cli.run(["import", tree]).status == 0)
        let file = looseFile(cache, BlobID(hashing: damaged))
        flipByte(file, at: readFile(file).count / 2)

        let export = try cli.run(["export", out])
        #expect(export.status == 2 && export.stderr.contains("damaged"), "\(export.stderr)")
        #expect(try listing(out) == ["sub/", "sub/fine"], "the damaged value's file removed again")
        #expect(readFile(out + "/sub/fine") == [1, 2, 3])
    }

    /// Whether this machine lets a test mount a small file system of its own (a private mount
    /// namespace, as root or in a user namespace): how a full disk is made without filling one.
    static let canMountScratch: Bool = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["-rm", "sh", "-c", "mount -t tmpfs -o size=1m none /mnt"]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    @Test("a full disk stops the export: one line, exit 2, every file there whole",
          .enabled(if: canMountScratch, "needs a private tmpfs (unshare -rm)"))
    func fullDiskStops() throws {
        let dir = TemporaryDirectory()
        let tree = dir.appending("tree"), full = dir.appending("full")
        for folder in [tree + "/a", tree + "/b", full] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        for n in 0..<40 { writeFile(tree + (n % 2 == 0 ? "/a/" : "/b/") + "f\(n)", Samples.random(100_000, seed: UInt64(n))) }
        let cli = CLI(directory: dir.appending("cache"))
        #expect(try cli.run(["import", tree]).status == 0)

        // In a 1 MiB tmpfs, seen only by this shell: export, then compare what it wrote.
        let script = """
            mount -t tmpfs -o size=1m none "$2" || exit 99
            "$0" --dir "$1" export "$2/out"; status=$?
            cd "$2/out" && find . -type f | while read -r f; do cmp -s "$f" "$3/$f" && echo "whole: $f" || echo "differs: $f"; done
            exit $status
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["-rm", "sh", "-c", script, ChildProcess.productsDirectory.appendingPathComponent("blobcache").path,
                             dir.appending("cache"), full, tree]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()

        #expect(process.terminationStatus == 2, "\(stderr)")
        #expect(stderr.split(separator: "\n").count == 1, "\(stderr)")
        #expect(stderr.hasPrefix("blobcache: stopped at key '") && stderr.contains("No space left on device"), "\(stderr)")
        let whole = stdout.split(separator: "\n").filter { $0.hasPrefix("whole: ") }
        #expect(!stdout.contains("differs: "), "\(stdout)")
        #expect(whole.count > 0 && whole.count < 40, "\(stdout)")
        #expect(stdout.contains("exported \(whole.count) entries") && stdout.contains("stopped before \(40 - whole.count) more"), "\(stdout)")
    }
}
