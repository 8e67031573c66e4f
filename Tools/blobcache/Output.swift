import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Shared formatting for the commands' output.
enum Output {
    /// Prints a value as one line of JSON (keys sorted, so scripts and diffs are stable).
    static func json(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// ISO 8601 in UTC with seconds, e.g. `2026-11-22T01:52:38Z`.
    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    /// Whether standard error is a terminal (progress bars only then).
    static var isTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Redraws a one-line progress bar on standard error.
    static func progress(_ done: Int, of total: Int, label: String) {
        let width = 30
        let filled = total == 0 ? width : width * done / total
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        Streams.writeStandardError("\r\(label) [\(bar)] \(done)/\(total)")
        if done == total { Streams.writeStandardError("\n") }
    }
}
