import ArgumentParser
import BlobCache
import Foundation

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write every entry out as a file under DIR, its key as the relative path.",
        discussion: """
            Keys that would escape DIR (absolute, or with a '..', '.' or empty path component, \
            judged byte by byte), keys that cannot be file names (a component over 255 bytes, a key \
            under another key's file) and damaged values are reported one line each and skipped; \
            every other key is written. Exit 2 at the end when any key was skipped.
            """)

    @Argument(help: "The directory to write into (created when missing).") var destination: String
    @OptionGroup var global: GlobalOptions

    /// Whether a key is a safe relative path inside the destination: split at every `/` byte
    /// (not at `Character`s, where `/` followed by a combining mark is no `/`), no component
    /// empty, `.` or `..`, none longer than a file name may be, no NUL.
    static func isSafe(_ key: String) -> Bool {
        let bytes = Array(key.utf8)
        guard bytes.first != UInt8(ascii: "/"), !bytes.contains(0) else { return false }
        return bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).allSatisfy { component in
            let dots = component.count <= 2 && component.allSatisfy { $0 == UInt8(ascii: ".") }   // "." or ".."
            return !component.isEmpty && component.count <= 255 && !dots
        }
    }

    func run() throws {
        let cache = try global.open()
        let keys = try Failure.running { try global.keySpace(of: cache).keys() }
        var skipped = 0, written = 0
        for key in keys {
            let shown = BlobCache.escapedKey(key)
            guard Self.isSafe(key) else {
                Failure.say("skipping key '\(shown)': it would escape \(destination) or is not a file name")
                skipped += 1
                continue
            }
            let value: [UInt8]?
            do { value = try global.keySpace(of: cache).bytes(forKey: key) } catch {
                Failure.say("skipping key '\(shown)': \(error)")
                skipped += 1
                continue
            }
            guard let value else { continue }   // expired meanwhile
            let path = destination + "/" + key
            do {
                try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                        withIntermediateDirectories: true)
                try Data(value).write(to: URL(fileURLWithPath: path))
                written += 1
            } catch {
                Failure.say("skipping key '\(shown)': cannot write it: \(error.localizedDescription)")
                skipped += 1
            }
        }
        try Failure.running { try cache.close() }
        print("exported \(written) entries to \(destination)" + (skipped > 0 ? ", skipped \(skipped)" : ""))
        if skipped > 0 { throw ExitCode(Failure.error) }
    }
}
