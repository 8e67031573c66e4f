import BlobCache
import Foundation

/// W6: processes sharing one cache. Each of P processes opens the cache, waits for the start,
/// then does `count` operations on 4 KiB values: puts and gets alternately, half on 256 keys
/// every process shares and half on 1,024 of its own, each put a value no other put stores.
/// Run with P = 1 and P = 4 on fresh caches; the figure is aggregate ops/s (all processes'
/// operations over the time from the start to the last one done; opening and closing are
/// outside it). compare.py runs python-diskcache the same way.
func w6(_ options: Options) throws -> [Measurement] {
    let count = 20_000
    var results: [Measurement] = []
    for processes in [1, 4] {
        let directory = freshDirectory(options.work, "W6-\(processes)")
        let seed = try BlobCache(directory: directory)
        for key in 0..<256 { try seed.set(w6Value(process: 99, step: key), forKey: "shared-\(key)") }
        try seed.close()
        let children = try (0..<processes).map { index -> (Process, Pipe, Pipe) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            process.arguments = ["w6-child", directory, "\(index)", "\(count)"]
            let input = Pipe(), output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            return (process, input, output)
        }
        for (_, _, output) in children { guard try readWord(output) == "ready" else { throw WorkloadError.usage("W6 child failed") } }
        settle()
        let start = now()
        for (_, input, _) in children { input.fileHandleForWriting.write(Data("go\n".utf8)) }
        for (_, _, output) in children { guard try readWord(output) == "done" else { throw WorkloadError.usage("W6 child failed") } }
        let seconds = now() - start
        for (process, input, _) in children {
            try input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
        let report = try BlobCache.check(directory: directory)
        precondition(report.errors.isEmpty, "W6: fsck found \(report.errors)")
        var measurement = Measurement(workload: "W6.\(processes)p", ops: processes * count, seconds: seconds,
                                      bytes: processes * count * 4096)
        measurement.note = "\(processes) process\(processes == 1 ? "" : "es") × \(count) ops"
        results.append(measurement)
    }
    return results
}

/// The child side of W6: open, say "ready", wait for "go", run, say "done", close.
func w6Child(directory: String, index: Int, count: Int) throws {
    let cache = try BlobCache(directory: directory)
    defer { try? cache.close() }
    let values = (0..<count / 2).map { w6Value(process: index, step: $0) }   // made before the start
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    guard readLine() == "go" else { return }
    var state = UInt64(index + 1) &* 0x9E37_79B9_7F4A_7C15
    for step in 0..<count {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let shared = step % 4 < 2
        let key = shared ? "shared-\((state >> 33) % 256)" : "own-\(index)-\((state >> 33) % 1024)"
        if step % 2 == 0 {
            try cache.set(values[step / 2], forKey: key)
        } else {
            _ = try cache.bytes(forKey: key)
        }
    }
    FileHandle.standardOutput.write(Data("done\n".utf8))
    _ = readLine()
}

/// A 4 KiB value no other (process, step) stores: half compressible text, then the pair.
func w6Value(process: Int, step: Int) -> [UInt8] {
    var value = [UInt8](repeating: 0, count: 4096)
    var state = UInt64(process) << 32 | UInt64(step)
    for index in 0..<4096 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        value[index] = index < 2048 ? UInt8(ascii: "a") + UInt8(state >> 60) : UInt8(truncatingIfNeeded: state >> 56)
    }
    return value
}

/// The next whitespace-separated word a child printed.
private func readWord(_ pipe: Pipe) throws -> String {
    var word: [UInt8] = []
    while true {
        let byte = try pipe.fileHandleForReading.read(upToCount: 1) ?? Data()
        guard let first = byte.first else { return String(decoding: word, as: UTF8.self) }
        if first == UInt8(ascii: "\n") { return String(decoding: word, as: UTF8.self) }
        word.append(first)
    }
}
