import ArgumentParser
import BlobCache
import Foundation

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write every entry out as a file under DIR, its key as the relative path.",
        discussion: "Keys that would escape DIR (absolute, or with a '..' or empty path component) are refused with a message and exit 2; the others are still written.")

    @Argument(help: "The directory to write into (created when missing).") var destination: String
    @OptionGroup var global: GlobalOptions

    /// Whether a key is a safe relative path inside the destination.
    static func isSafe(_ key: String) -> Bool {
        guard !key.hasPrefix("/"), !key.contains("\u{0}") else { return false }
        return key.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { $0 != ".." && $0 != "." && !$0.isEmpty }
    }

    func run() throws {
        let cache = try global.open()
        let keys = try Failure.running { try cache.keys() }
        var refused = 0, written = 0
        for key in keys {
            guard Self.isSafe(key) else {
                Failure.say("refusing key '\(BlobCache.escapedKey(key))': it would escape \(destination)")
                refused += 1
                continue
            }
            guard let value = try Failure.running({ try cache.bytes(forKey: key) }) else { continue }
            let path = destination + "/" + key
            do {
                try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                        withIntermediateDirectories: true)
                try Data(value).write(to: URL(fileURLWithPath: path))
            } catch {
                Failure.say("cannot write \(path): \(error.localizedDescription)")
                throw ExitCode(Failure.error)
            }
            written += 1
        }
        try Failure.running { try cache.close() }
        print("exported \(written) entries to \(destination)")
        if refused > 0 { throw ExitCode(Failure.error) }
    }
}
