import Foundation
import Testing
import SystemPackage
@testable import BlobCache

/// Whether the suite runs under ThreadSanitizer (`Tools/test.sh --sanitize thread` sets
/// `BLOBCACHE_SANITIZER`). Tests whose work happens in child processes (the CLI, crash
/// writers) are skipped there: a child does its work on one thread, where ThreadSanitizer has
/// nothing to find, and each instrumented child costs a second or more to start; the plain and
/// AddressSanitizer runs take them all.
let underThreadSanitizer = ProcessInfo.processInfo.environment["BLOBCACHE_SANITIZER"] == "thread"

/// Why a test is skipped under ThreadSanitizer.
let childProcessesUnderTSan: Comment = "its work is in child processes: the plain and AddressSanitizer runs take it"

/// Why the fault, power-loss and disk-bound sweeps are skipped under ThreadSanitizer: each
/// replays one thread's operations hundreds of times (a fresh cache, a fault, a reopen, a
/// check), so it finds no race that the concurrency tests do not, at the cost of most of the
/// sanitizer run; the plain run takes every fault point and AddressSanitizer every 10th.
let singleThreadedUnderTSan: Comment = "one thread's operations replayed hundreds of times: the plain and AddressSanitizer runs take it"

/// A fresh directory under the system temp folder, removed when the test's scope ends.
final class TemporaryDirectory {
    let path: String

    init() {
        var template = Array((NSTemporaryDirectory() + "blobcache-test-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func appending(_ component: String) -> String { path + "/" + component }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A seeded generator (SplitMix64), so every random test replays identically.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum Samples {
    /// Incompressible bytes.
    static func random(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        var bytes = [UInt8](repeating: 0, count: count)
        var index = 0
        while index < count {
            var word = generator.next()
            for _ in 0..<8 where index < count {
                bytes[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
        return bytes
    }

    /// Text-like bytes that compress well.
    static func compressible(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
        let words = ["cache", "blob", "journal", "segment", "swift", "value", "key", "hash", "lz4", "zlib"]
        var generator = SeededGenerator(seed: seed)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 16)
        while bytes.count < count {
            bytes.append(contentsOf: words[Int(generator.next() % UInt64(words.count))].utf8)
            bytes.append(UInt8(ascii: " "))
        }
        return Array(bytes.prefix(count))
    }
}

extension BlobCache.Configuration {
    /// A configuration for tests: a manual clock, everything else default unless changed.
    static func testing(clock: ManualClock = ManualClock(), _ change: (inout Self) -> Void = { _ in }) -> Self {
        var configuration = Self()
        configuration.clock = clock
        change(&configuration)
        return configuration
    }
}

/// Reads a whole file (empty when it cannot be read). With POSIX calls: FoundationEssentials'
/// `FileManager.contents(atPath:)` leaks its buffer for an empty file (LeakSanitizer), and the
/// power-loss model reads many (an emptied lock file).
func readFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    return bytes
}

/// Overwrites a whole file.
func writeFile(_ path: String, _ bytes: [UInt8]) {
    precondition(FileManager.default.createFile(atPath: path, contents: Data(bytes)), "cannot write \(path)")
}

/// The files below `directory` (relative paths), sorted.
func filesBelow(_ directory: String) -> [String] {
    guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
    var files: [String] = []
    while let name = walker.nextObject() as? String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory + "/" + name, isDirectory: &isDirectory), !isDirectory.boolValue {
            files.append(name)
        }
    }
    return files.sorted()
}

/// Changes bytes of a file in place (same inode, as damage on disk would).
func patchFile(_ path: String, at offset: Int, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY)
    precondition(fd >= 0, "cannot open \(path)")
    defer { close(fd) }
    let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
    precondition(written == bytes.count)
}

/// Flips the bits of one byte of a file in place.
func flipByte(_ path: String, at offset: Int, mask: UInt8 = 0xFF) {
    let byte = readFile(path)[offset]
    patchFile(path, at: offset, [byte ^ mask])
}

/// Cuts a file to `length` bytes in place.
func truncateFile(_ path: String, to length: Int) {
    precondition(truncate(path, off_t(length)) == 0)
}

/// Compares byte arrays without printing megabytes when they differ.
func same(_ lhs: [UInt8]?, _ rhs: [UInt8]?) -> Bool { lhs == rhs }

/// Where each record of a journal image starts (walking the length fields).
func journalRecordOffsets(_ image: [UInt8]) -> [Int] {
    var offsets: [Int] = [], offset = JournalFormat.headerSize
    while offset + JournalFormat.frameSize <= image.count {
        offsets.append(offset)
        offset += JournalFormat.frameSize + (Int(image[offset]) | Int(image[offset + 1]) << 8
            | Int(image[offset + 2]) << 16 | Int(image[offset + 3]) << 24)
    }
    return offsets
}

/// The loose file of blob `id` in the cache at `root`.
func looseFile(_ root: String, _ id: BlobID) -> String {
    CacheFiles(root: CachePath(normalizing: root)).loosePath(of: id).string
}
