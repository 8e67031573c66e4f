import ArgumentParser
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

/// `blobcache`: store, read, list, check and compact a BlobCache directory.
@main
struct BlobCacheTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blobcache",
        abstract: "A content-addressed, compressed, journaled disk cache.",
        discussion: """
            Global options (--dir, --max-size, --max-entries, --pack-threshold, --compression, --wait, --namespace, --key-file, --remote, --remote-key-file, -q, -v) go before or after \
            the command. DIR defaults to $BLOBCACHE_DIR, else $XDG_CACHE_HOME/blobcache, else \
            ~/.cache/blobcache. SIZE takes decimal suffixes k, M, G, T (500M = 500,000,000 bytes) \
            or binary ones Ki, Mi, Gi, Ti (2Gi = 2 x 2^30).

            --max-size and --max-entries apply only to commands that fill the cache (put, import, evict, compact, serve); \
            fsck reports what is over them. get, ls, stat, export and fsck never create a cache.

            Exit codes: 0 success; 1 not found (get, rm); 2 error (bad input, a failed write, I/O, damaged data, an MD5 collision refused); \
            8 the cache cannot be opened (no cache at DIR for a read; another process held DIR/lock for longer than --wait, default 30 s; \
            unusable directory); 9 key file problem (--key-file, --remote-key-file); \
            64 usage error (also: a put KEY that is not valid UTF-8; config lowering a cap without --yes). fsck: 0 clean, 1 errors found and all repaired, 4 errors left, 8 as above.

            serve makes DIR an HTTP cache for ccache, sccache and Bazel; --remote URL adds a remote tier (remote check tests it).
            """,
        version: BlobCache.version,
        subcommands: [Put.self, Get.self, Remove.self, List.self, Stat.self, Import.self, Export.self,
                      Expire.self, Evict.self, Clear.self, Fsck.self, Compact.self, Config.self] + networkCommands)

    /// Runs the tool after moving global options given before the command to after it, so
    /// `blobcache --dir D get k` and `blobcache get k --dir D` mean the same.
    static func main() {
        let given = Array(CommandLine.arguments.dropFirst())
        if let option = GlobalOptions.capBeforeConfig(given) {
            Streams.writeStandardError("blobcache: \(option) before 'config' is a global option, which config does not take; to save a default cap write 'config \(option) VALUE'\n")
            exitProcess(ExitCode.validationFailure.rawValue)
        }
        let arguments = GlobalOptions.hoisted(given)
        Streams.checkStandardOutputAtExit()
        // Every command, whether it opens the cache or not (fsck reads the directory itself).
        if arguments.contains(where: { $0 == "-v" || $0 == "--verbose" }),
           !arguments.contains(where: { $0 == "-q" || $0 == "--quiet" }) { ProcessMemory.reportAtExit() }
        if let first = arguments.first, !first.hasPrefix("-"), first != "help",
           !configuration.subcommands.contains(where: { $0._commandName == first }) {
            Streams.writeStandardError("blobcache: unknown command '\(first)'; see 'blobcache --help'\n")
            exitProcess(ExitCode.validationFailure.rawValue)
        }
        main(arguments)
    }
}

/// The C library's `exit(3)` (which `Foundation.exit` re-exported), named apart from
/// `ParsableCommand.exit(withError:)` so a command's static code reaches it.
private func exitProcess(_ code: Int32) -> Never { exit(code) }
