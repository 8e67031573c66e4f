#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#elseif canImport(Darwin)
@preconcurrency import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The process's own memory as the kernel counts it (`/proc/self/status`), for `-v`: at exit,
/// `blobcache: debug: peak resident memory N bytes`, the high-water mark of the process's
/// resident set (`VmHWM`), which `/usr/bin/time -v` calls its maximum resident set size.
enum ProcessMemory {
    /// `VmHWM` in bytes (on Darwin getrusage's `ru_maxrss`); `nil` where neither says.
    static func peakResidentBytes() -> Int? {
        #if canImport(Darwin)
        // No /proc: getrusage's maximum resident set size, which Darwin counts in bytes.
        var usage = rusage()
        guard getrusage(RUSAGE_SELF, &usage) == 0 else { return nil }
        return Int(usage.ru_maxrss)
        #else
        // Read with read(2): /proc files report a size of 0, which Foundation's readers trust.
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        let status = String(decoding: bytes, as: UTF8.self)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kibibytes = Int(line.dropFirst("VmHWM:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") else { return nil }
        return kibibytes * 1024
        #endif
    }

    nonisolated(unsafe) private static var registered = false

    /// Prints the peak at the process's exit, whatever the exit (success, a failure's exit code).
    static func reportAtExit() {
        guard !registered else { return }
        registered = true
        atexit {
            guard let peak = ProcessMemory.peakResidentBytes() else { return }
            Streams.writeStandardError("blobcache: debug: peak resident memory \(peak) bytes\n")
        }
    }
}
