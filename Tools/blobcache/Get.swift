import ArgumentParser
import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write KEY's value to standard output (or -o FILE). Missing or expired: exit 1.")

    @Argument(help: "The key.") var key: String
    @Option(name: .shortAndLong, help: ArgumentHelp("Write the value to this file instead (as > would: truncated, its mode and links kept; - for standard output).", valueName: "FILE")) var output: String?
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if key.isEmpty { throw ValidationError("KEY must not be empty") }
    }

    func run() throws {
        guard KeyArgument.isExact(key) else {
            Failure.say(KeyArgument.missMessage(key))
            throw ExitCode(Failure.notFound)
        }
        let cache = try global.open(for: .reading)
        let reader = try Failure.running { try global.keySpace(of: cache).openValue(forKey: key) }
        guard let reader else {
            try Failure.running { try cache.close() }
            Failure.say("no entry for key '\(BlobCache.escapedKey(key))'")
            throw ExitCode(Failure.notFound)
        }
        // Written as it is read, each piece once checked: damage found part way empties the
        // file (standard output cannot be taken back: the exit status says so).
        let destination = try Streams.openOutput(output ?? "-")
        defer { destination.close() }
        do {
            try Failure.running { try reader.forEachChunk { try destination.write($0) } }
        } catch {
            destination.discardWritten()
            reader.close()
            try? cache.close()
            throw error
        }
        try Failure.running { try cache.close() }
    }
}
