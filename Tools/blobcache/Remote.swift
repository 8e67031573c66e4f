import ArgumentParser
import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if BLOBCACHE_NETWORK
import BlobCacheRemote

extension BlobCacheTool {
    /// The commands that need the networking modules (left out of sanitizer builds).
    static let networkCommands: [any ParsableCommand.Type] = [Serve.self, Credential.self, Remote.self]
}

/// `blobcache remote`: the remote tier.
struct Remote: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Work with the remote tier named by --remote.",
        subcommands: [Check.self])

    /// `blobcache remote check`: is the remote reachable, and does a value make the round trip?
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check that the remote tier (--remote URL) is reachable: store, read back and delete a probe.",
            discussion: "Exit codes: 0 the probe made the round trip; 2 it did not (unreachable, refused, or other bytes came back); 64 no or a bad --remote.")

        @OptionGroup var global: GlobalOptions

        @Flag(help: "Print one line of JSON: remote, ok, milliseconds, error.")
        var json = false

        private struct Result: Encodable {
            let remote: String
            let ok: Bool
            let milliseconds: Double
            let error: String?
        }

        func run() throws {
            guard let store = try global.remoteStore() else {
                throw ValidationError("remote check needs --remote URL")
            }
            var probe = [UInt8](repeating: 0, count: 4096)
            for index in probe.indices { probe[index] = .random(in: 0...255) }
            let object = RemoteObject.key("blobcache remote check \(UUID().uuidString)")
            let start = ContinuousClock.now
            var failure: String?
            do {
                try store.put(object, bytes: probe, expiresAt: Date().addingTimeInterval(60))
                let back = try store.get(object)
                try store.delete(object)
                if back != probe { failure = back == nil ? "the probe was stored but not found" : "the probe came back changed" }
            } catch {
                failure = "\(error)"
            }
            let elapsed = ContinuousClock.now - start
            let milliseconds = Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15
            if json {
                try Output.json(Result(remote: store.description, ok: failure == nil, milliseconds: milliseconds, error: failure))
            } else if failure == nil {
                print("remote ok: \(store): stored, read back and deleted 4096 bytes in \(Formatting.fixed(milliseconds, decimals: 1)) ms")
            }
            if let failure {
                if !json { Failure.say("remote check failed: \(store): \(failure)") }
                throw ExitCode(Failure.error)
            }
        }
    }
}
#else
extension BlobCacheTool {
    /// Built without the networking modules (a sanitizer build): no `remote`, no `serve`.
    static let networkCommands: [any ParsableCommand.Type] = []
}
#endif
