import Foundation
import Testing
@testable import BlobCache

/// `put` and `get` stream: values of any size in bounded memory, anything readable as input,
/// a cap that stops the read, and no half value left behind by damage found part way.
@Suite("blobcache: streaming put and get", .serialized, .disabled(if: underThreadSanitizer, childProcessesUnderTSan))
struct CLIStreamingTests {
    private var executable: String { ChildProcess.productsDirectory.appendingPathComponent("blobcache").path }

    /// Runs `script` under bash with `$BC` the tool and `$DIR` the cache.
    private func bash(_ script: String, cache: String) throws -> CLI.Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script]
        process.environment = ProcessInfo.processInfo.environment.merging(["BC": executable, "DIR": cache]) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CLI.Result(status: process.terminationStatus, stdout: stdout, stderr: String(decoding: stderr, as: UTF8.self))
    }

    @Test("put takes /dev/null, <(cmd), a pipe and a FIFO")
    func anythingReadable() throws {
        let dir = TemporaryDirectory()
        let cache = dir.appending("cache")
        let cli = CLI(directory: cache)
        #expect(try cli.run(["put", "empty", "/dev/null"]).status == 0)
        #expect(try cli.run(["get", "empty"]).stdout.isEmpty)
        #expect(try cli.run(["ls"]).lines.map { $0.split(separator: "\t").first.map(String.init) } == ["empty"])
        #expect(try bash(#""$BC" --dir "$DIR" put k <(printf hi)"#, cache: cache).status == 0)
        #expect(try cli.run(["get", "k"]).output == "hi")
        let piped = try bash(#"head -c 3000000 /dev/urandom | tee "$DIR.src" | "$BC" --dir "$DIR" put piped && "$BC" --dir "$DIR" get piped | cmp - "$DIR.src""#, cache: cache)
        #expect(piped.status == 0, "\(piped.stderr)")
        let fifo = dir.appending("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let fed = try bash(#"head -c 2500000 /dev/urandom > "$DIR.fifo-src"; cat "$DIR.fifo-src" > "$0" & "$BC" --dir "$DIR" put f "$0" && wait && "$BC" --dir "$DIR" get f | cmp - "$DIR.fifo-src""#
            .replacingOccurrences(of: "$0", with: fifo), cache: cache)
        #expect(fed.status == 0, "\(fed.stderr)")
    }

    @Test("--max-size stops a put from /dev/zero at the cap: exit 2, bounded memory, nothing stored")
    func capStopsTheRead() throws {
        let dir = TemporaryDirectory()
        let cache = dir.appending("cache")
        #expect(try CLI(directory: cache).run(["put", "kept"], stdin: Data("x".utf8)).status == 0)
        let run = try PeakMemory.run(executable, ["--dir", cache, "--max-size", "1M", "put", "z"], stdin: "/dev/zero")
        #expect(run.status == 2)
        #expect(run.stderr.split(separator: "\n").count == 1 && run.stderr.contains("more than the cache limit"), "\(run.stderr)")
        if PeakMemory.measurable { #expect(run.peakBytes <= 64 << 20, "peak \(run.peakBytes)") }
        #expect(try CLI(directory: cache).run(["ls"]).lines.map { $0.split(separator: "\t").first.map(String.init) } == ["kept"])
    }

    @Test("a value read back through put and get is the same, and a large one is stored in pieces")
    func roundTrip() throws {
        let dir = TemporaryDirectory()
        let cache = dir.appending("cache")
        let source = dir.appending("source")
        writeFile(source, Samples.compressible(9_000_000, seed: 2) + Samples.random(7_000_000, seed: 3))
        let put = try CLI(directory: cache).run(["put", "big", source])
        #expect(put.status == 0)
        let id = try #require(BlobID(hex: put.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(readFile(looseFile(cache, id))[4] == PiecedBlobFormat.version)
        let out = dir.appending("out")
        #expect(try CLI(directory: cache).run(["get", "big", "-o", out]).status == 0)
        #expect(readFile(out) == readFile(source))
        #expect(try CLI(directory: cache).run(["fsck"]).status == 0)
    }

    @Test("damage at 3/4 of a large blob: get -o exits 2 and leaves the file empty")
    func damageEmptiesTheOutput() throws {
        let dir = TemporaryDirectory()
        let cache = dir.appending("cache")
        let source = dir.appending("source")
        writeFile(source, Samples.random(8_000_000, seed: 4))
        let put = try CLI(directory: cache).run(["put", "big", source])
        let id = try #require(BlobID(hex: put.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        let file = looseFile(cache, id)
        flipByte(file, at: readFile(file).count * 3 / 4)
        let out = dir.appending("out")
        writeFile(out, Array("previous contents".utf8))
        let get = try CLI(directory: cache).run(["get", "big", "-o", out])
        #expect(get.status == 2)
        #expect(get.stderr.contains("corrupt") || get.stderr.contains("damaged"), "\(get.stderr)")
        #expect(readFile(out).isEmpty)
        // The damaged value is gone: the next get is a plain miss.
        #expect(try CLI(directory: cache).run(["get", "big"]).status == 1)
    }

    @Test("a 4 GiB value goes through put, get and fsck in at most 64 MiB of memory",
          .disabled(if: !PeakMemory.measurable, "a sanitizer's shadow memory is not the program's"))
    func fourGiBInBoundedMemory() throws {
        let dir = TemporaryDirectory()
        let cache = dir.appending("cache")
        let source = dir.appending("sparse")
        #expect(FileManager.default.createFile(atPath: source, contents: nil))
        #expect(truncate(source, off_t(4) << 30) == 0)
        let put = try PeakMemory.run(executable, ["--dir", cache, "put", "big", source])
        #expect(put.status == 0, "\(put.stderr)")
        #expect(put.peakBytes <= 64 << 20, "put peak \(put.peakBytes)")
        let get = try PeakMemory.run(executable, ["--dir", cache, "get", "big"], stdout: "/dev/null")
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.peakBytes <= 64 << 20, "get peak \(get.peakBytes)")
        #expect(try CLI(directory: cache).run(["ls", "--json"]).output.contains("4294967296"))
        let fsck = try PeakMemory.run(executable, ["--dir", cache, "fsck"])
        #expect(fsck.status == 0, "\(fsck.stderr)")
        #expect(fsck.peakBytes <= 64 << 20, "fsck peak \(fsck.peakBytes)")
    }

    @Test("import and export stream too: a 1 GiB file each way in at most 64 MiB; a damaged value leaves the exported file as it was",
          .disabled(if: !PeakMemory.measurable, "a sanitizer's shadow memory is not the program's"))
    func importExportInBoundedMemory() throws {
        let dir = TemporaryDirectory()
        let cache = dir.appending("cache")
        let tree = dir.appending("tree")
        try FileManager.default.createDirectory(atPath: tree + "/sub", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: tree + "/sub/big", contents: nil))
        #expect(truncate(tree + "/sub/big", off_t(1) << 30) == 0)
        writeFile(tree + "/damaged", Samples.random(5_000_000, seed: 7))
        let imported = try PeakMemory.run(executable, ["--dir", cache, "import", tree])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.peakBytes <= 64 << 20, "import peak \(imported.peakBytes)")
        let id = BlobID(hashing: Samples.random(5_000_000, seed: 7))
        let file = looseFile(cache, id)
        flipByte(file, at: readFile(file).count / 2)
        let out = dir.appending("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        writeFile(out + "/damaged", Array("the copy exported before".utf8))
        let exported = try PeakMemory.run(executable, ["--dir", cache, "export", out])
        #expect(exported.peakBytes <= 64 << 20, "export peak \(exported.peakBytes)")
        #expect(exported.status != 0 && exported.stderr.contains("damaged"), "\(exported.stderr)")
        #expect((try? FileManager.default.attributesOfItem(atPath: out + "/sub/big")[.size] as? Int) == 1 << 30)
        #expect(readFile(out + "/damaged") == Array("the copy exported before".utf8), "a damaged value leaves the file as it was")
        #expect((try FileManager.default.contentsOfDirectory(atPath: out)).sorted() == ["damaged", "sub"], "no temporary file left")
    }
}
