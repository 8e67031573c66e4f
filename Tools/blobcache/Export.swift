import ArgumentParser
import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write every entry out as a file under DIR, its key as the relative path.",
        discussion: """
            Keys that would escape DIR (absolute, or with a '..', '.' or empty path component, \
            judged byte by byte), keys that cannot be file names (a component over 255 bytes, a key \
            under another key's file), damaged values and paths that meet a symbolic link inside \
            DIR are reported one line each and skipped; every other key is written, on every core. \
            Exit 2 at the end when any key was skipped. A full disk, a quota reached or a read-only \
            file system stops the export instead, with one line (exit 2). Files are not synced to \
            disk (run sync for that); a file that existed is replaced only once its new copy is whole.
            """)

    @Argument(help: "The directory to write into (created when missing).") var destination: String
    @Option(help: ArgumentHelp("Export only the keys that start with P, each under its key without P (import --prefix P undone).",
                               valueName: "P")) var prefix = ""
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
        let cache = try global.open(for: .reading)
        let space = global.keySpace(of: cache)
        let prefix = self.prefix
        let keys = try Failure.running { try space.keys() }.filter { $0.utf8.starts(with: prefix.utf8) }
            .map { String(decoding: $0.utf8.dropFirst(prefix.utf8.count), as: UTF8.self) }
        let plan = ExportPlan(keys: keys, destination: destination)
        let writer = try Failure.running { try ExportWriter(destination: destination) { try space.openValue(forKey: prefix + $0) } }
        let outcomes = writer.export(plan.accepted)
        var skipped = plan.refused.count, written = 0, notTaken = 0
        for (key, reason) in plan.refused { Failure.say("skipping key '\(BlobCache.escapedKey(key))': \(reason)") }
        for (key, outcome) in zip(plan.accepted, outcomes) {
            switch outcome {
            case .written: written += 1
            case .gone: break   // expired or removed meanwhile
            case .notTaken: notTaken += 1
            case .failed(let reason):
                Failure.say("skipping key '\(BlobCache.escapedKey(key))': \(reason)")
                skipped += 1
            }
        }
        if let stop = writer.stopped { Failure.say("stopped at key '\(BlobCache.escapedKey(stop.key))': \(stop.reason)") }
        try Failure.running { try cache.close() }
        print("exported \(written) entries to \(destination)" + (skipped > 0 ? ", skipped \(skipped)" : "")
              + (writer.stopped != nil ? ", stopped before \(notTaken) more" : ""))
        if skipped > 0 || writer.stopped != nil { throw ExitCode(Failure.error) }
    }
}
