import ArgumentParser
import BlobCache
#if BLOBCACHE_NETWORK
import BlobCacheRemote
#endif
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

/// Options every command takes: where the cache is and the limits for this invocation.
struct GlobalOptions: ParsableArguments {
    @Option(name: .customLong("dir"), help: ArgumentHelp("The cache directory.", valueName: "DIR"))
    var directory: String?

    @Option(help: ArgumentHelp("Cap on bytes on disk of live blobs, for this invocation (a smaller cap trims at open).", valueName: "SIZE"),
            transform: Size.parse)
    var maxSize: Int?

    @Option(help: ArgumentHelp("Cap on entries, for this invocation.", valueName: "N"))
    var maxEntries: Int?

    @Option(help: ArgumentHelp("Blobs whose stored size is below SIZE go into pack segments; 0 stores every new blob as a loose file.", valueName: "SIZE"),
            transform: Size.parse)
    var packThreshold: Int?

    @Option(help: ArgumentHelp(
        "How new values are compressed: adaptive (the default: LZ4 where it saves an eighth, from 256 KiB three quarters), balanced (LZ4 wherever it saves), fast-reads (LZ4 below 256 KiB, raw from 256 KiB), smallest (zlib level 6) or off.",
        valueName: "PRESET"), transform: GlobalOptions.compressionPreset)
    var compression: CompressionPolicy?

    @Option(help: ArgumentHelp(
        "Work on the keys of namespace NAME (put, get, rm, ls, clear, stat, export, import); without it, the cache's own keys.",
        valueName: "NAME"))
    var namespace: String?

    @Option(help: ArgumentHelp(
        "How long to wait while another process holds DIR/lock (one of its operations, or a script's `flock DIR/lock ...`), then exit 8 naming the holder's pid; 0 fails at once.",
        valueName: "SECONDS"))
    var wait: Double = 30

    @Option(help: ArgumentHelp(
        "The key of an encrypted cache: a file of 32 raw bytes, or of 64 hex digits and an optional newline (default: $BLOBCACHE_KEY_FILE). A cache first opened with a key is encrypted for good; every later command needs that key (exit 9 without it, with another, or with a key for a plain cache).",
        valueName: "PATH"))
    var keyFile: String?

    @Flag(name: [.customShort("q"), .long], help: "Print no warnings and no progress on standard error (errors still are).")
    var quiet = false

    @Flag(name: [.customShort("v"), .long], help: "Print the library's debug lines on standard error too.")
    var verbose = false

#if BLOBCACHE_NETWORK
    @Option(help: ArgumentHelp(
        "A remote tier shared with other machines: http://[USER:PASS@]HOST/PATH[?layout=flat] (nginx with WebDAV PUT, blobcache serve), s3://BUCKET[/PREFIX][?endpoint=URL&region=R&style=path|virtual&profile=P] (credentials as the AWS CLI finds them), or redis://[[USER]:PASS@]HOST:PORT[/DB]/PREFIX (rediss:// for TLS, ?ca=PEMFILE; redis+cluster://H1:P1,H2:P2/PREFIX for Redis Cluster). Misses fall through to it; puts and removes reach it.",
        valueName: "URL"))
    var remote: String?

    @Option(help: ArgumentHelp(
        "With --remote: how long one remote call may take in all, connecting to last byte (default 2). A remote that is slower is skipped for a while; local operations never fail because of it.",
        valueName: "SECONDS"))
    var remoteTimeout: Double?

    @Option(help: ArgumentHelp(
        "With --remote: authenticate the key records shared through it with this key (32 raw bytes, or 64 hex digits), the same on every machine; records without a valid tag are refused. Refused (exit 9) when its group or others may read it.",
        valueName: "PATH"))
    var remoteKeyFile: String?
#endif

    /// The options that take a value, as `hoisted` moves them.
    static let valued: Set<String> = ["--dir", "--max-size", "--max-entries", "--pack-threshold", "--compression", "--wait", "--namespace", "--remote",
                                      "--key-file", "--remote-key-file", "--remote-timeout"]

    /// The global options that take no value, as `hoisted` moves them.
    static let flags: Set<String> = ["-q", "--quiet", "-v", "--verbose"]

    /// Commands whose subcommand comes next (`remote check`): hoisted options go after both.
    static let groups: Set<String> = ["remote"]

    /// `--wait` as the library takes it.
    var lockTimeout: Duration {
        get throws {
            guard wait.isFinite, wait >= 0, wait <= 1e9 else { throw ValidationError("--wait must be 0 to 1e9 seconds, got \(wait)") }
            return .milliseconds(Int64((wait * 1000).rounded()))
        }
    }

    /// The global options given before the command (each with its value), and where the
    /// command's name is (`arguments.count` when there is none).
    static func leadingOptions(_ arguments: [String]) -> (options: [String], command: Int) {
        var options: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = String(argument.split(separator: "=", maxSplits: 1).first ?? "")
            guard valued.contains(name) || flags.contains(argument) else { break }
            options.append(argument)
            if valued.contains(name), !argument.contains("="), index + 1 < arguments.count {
                options.append(arguments[index + 1])
                index += 1
            }
            index += 1
        }
        return (options, index)
    }

    /// The cap option (`--max-size`, `--max-entries`) given before a `config` command, if any:
    /// hoisted after it, it would become config's own option and be saved as a default.
    static func capBeforeConfig(_ arguments: [String]) -> String? {
        let (options, command) = leadingOptions(arguments)
        guard command < arguments.count, arguments[command] == "config" else { return nil }
        var index = 0
        while index < options.count {
            let name = String(options[index].split(separator: "=", maxSplits: 1).first ?? "")
            if name == "--max-size" || name == "--max-entries" { return name }
            index += valued.contains(name) && !options[index].contains("=") ? 2 : 1   // past its value
        }
        return nil
    }

    /// Moves global options that come before the command to just after it.
    static func hoisted(_ arguments: [String]) -> [String] {
        var (leading, index) = leadingOptions(arguments)
        guard !leading.isEmpty, index < arguments.count else { return arguments }
        var command = [arguments[index]]
        if groups.contains(arguments[index]), index + 1 < arguments.count, !arguments[index + 1].hasPrefix("-") {
            index += 1
            command.append(arguments[index])
        }
        return command + leading + arguments[(index + 1)...]
    }

    /// DIR, else $BLOBCACHE_DIR, else $XDG_CACHE_HOME/blobcache, else ~/.cache/blobcache.
    var resolvedDirectory: String {
        if let directory { return directory }
        let environment = ProcessInfo.processInfo.environment
        if let dir = environment["BLOBCACHE_DIR"], !dir.isEmpty { return dir }
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty { return xdg + "/blobcache" }
        return (environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path) + "/.cache/blobcache"
    }

    /// The encryption `--key-file` (else `$BLOBCACHE_KEY_FILE`) gives; `nil` without either.
    var encryption: BlobCache.Encryption? {
        get throws {
            let path = keyFile ?? ProcessInfo.processInfo.environment["BLOBCACHE_KEY_FILE"].flatMap { $0.isEmpty ? nil : $0 }
            return try path.map(KeyFile.encryption(at:))
        }
    }

    /// Parses `--compression`: a preset's name (`fast-reads` or `fastReads`, any case).
    static func compressionPreset(_ name: String) throws -> CompressionPolicy {
        let presets: [String: CompressionPolicy] = ["adaptive": .adaptive, "balanced": .balanced, "fastreads": .fastReads,
                                                    "fast-reads": .fastReads, "smallest": .smallest, "off": .off]
        guard let preset = presets[name.lowercased()] else {
            throw ValidationError("unknown compression preset '\(name)': use adaptive, balanced, fast-reads, smallest or off")
        }
        return preset
    }

    /// A namespace name that is not valid UTF-8 is refused (exit 64), as keys are.
    func validate() throws {
        if let namespace { try KeyArgument.refuseUnlessExact(namespace, named: "--namespace NAME") }
    }

    /// The keys this invocation works on (`--namespace`).
    func keySpace(of cache: BlobCache) -> KeySpace { KeySpace(cache, namespace: namespace) }

    /// Opens the cache for `use`: `--max-size` and `--max-entries` apply only to a command
    /// that fills it, and a command that only reads never creates one (a missing directory
    /// exits 8, `no cache at DIR`).
    func open(for use: CacheUse, codec: Codec? = nil) throws -> BlobCache {
        var configuration = BlobCache.Configuration()
        if use == .filling {
            configuration.maxStoredBytes = maxSize
            configuration.maxEntries = maxEntries
        }
        // A read with a remote tier may write its hits back: a new directory is a cache to warm.
        let creates = use != .reading || remoteGiven
        if !creates { try requireCache() }
        if let packThreshold { configuration.packThreshold = packThreshold }
        if let compression { configuration.compression = compression }
        if let codec { configuration.codec = codec }
        configuration.lockTimeout = try lockTimeout
        configuration.encryption = try encryption
        configuration.logger = CommandLog.logger(quiet: quiet, verbose: verbose)
#if BLOBCACHE_NETWORK
        configuration.remote = try remoteStore()
        if let remoteKeyFile {
            guard remote != nil else { throw ValidationError("--remote-key-file needs --remote") }
            configuration.remoteAuthenticationKey = try KeyFile.remoteAuthenticationKey(at: remoteKeyFile)
        }
#endif
        if let maxEntries, maxEntries <= 0 { throw ValidationError("--max-entries must be positive") }
        return try Failure.opening {
            try BlobCache(directory: resolvedDirectory, configuration: configuration, createDirectory: creates)
        }
    }

    /// Whether `--remote` was given.
    var remoteGiven: Bool {
#if BLOBCACHE_NETWORK
        remote != nil
#else
        false
#endif
    }

    /// Exits 8 with `blobcache: no cache at DIR` when DIR does not exist: a mistyped `--dir`
    /// must not become a new, empty cache that answers every read with a miss.
    func requireCache() throws {
        var info = stat()
        guard lstat(resolvedDirectory, &info) != 0, errno == ENOENT else { return }
        Failure.say("no cache at \(resolvedDirectory)")
        throw ExitCode(Failure.cannotOpen)
    }
}

#if BLOBCACHE_NETWORK
extension GlobalOptions {
    /// The store `--remote` names, or `nil` without it; a bad URL is a usage error.
    func remoteStore() throws -> (any RemoteStore)? {
        guard let remote else {
            if remoteTimeout != nil { throw ValidationError("--remote-timeout needs --remote") }
            return nil
        }
        var timeout = RemoteStores.defaultTimeout
        if let remoteTimeout {
            guard remoteTimeout > 0, remoteTimeout <= 86_400 else {
                throw ValidationError("--remote-timeout must be more than 0 and at most 86400 seconds")
            }
            timeout = .milliseconds(Int64((remoteTimeout * 1000).rounded(.up)))
        }
        let store: any RemoteStore
        do {
            store = try RemoteStores.store(url: remote, timeout: timeout)
        } catch {
            throw ValidationError("--remote: \(error)")
        }
        // Unsigned requests are right for a public bucket, and a puzzle (403 on every call) for a
        // private one whose keys were expected to be found.
        if let bucket = store as? S3RemoteStore, !bucket.isSigned, !quiet {
            Failure.say("warning: no AWS credentials found (AWS_ACCESS_KEY_ID, AWS_PROFILE, ~/.aws/credentials); requests to \(bucket) go unsigned")
        }
        return store
    }
}
#endif

/// The tool's exit codes, and the one-line messages that go with them.
enum Failure {
    static let notFound: Int32 = 1
    static let error: Int32 = 2
    static let cannotOpen: Int32 = 8
    /// An encrypted cache without its key, with the wrong key, a key for a plain cache, or a
    /// key file that cannot be read or is of the wrong form.
    static let keyProblem: Int32 = 9

    /// The exit code for a library error met opening a cache.
    static func code(opening error: any Error) -> Int32 {
        switch error as? BlobCacheError {
        case .encryptionKeyRequired?, .wrongEncryptionKey?, .cacheNotEncrypted?: keyProblem
        default: cannotOpen
        }
    }

    /// Prints `blobcache: message` on standard error.
    static func say(_ message: String) {
        Streams.writeStandardError("blobcache: \(message)\n")
    }

    /// Runs an open: any failure exits 8 with its message.
    static func opening<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let exit as ExitCode {
            throw exit
        } catch {
            say("\(error)")
            throw ExitCode(code(opening: error))
        }
    }

    /// Runs a command's work: any error exits 2 with one line (a library error's message).
    static func running<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let exit as ExitCode {
            throw exit
        } catch let error as BlobCacheError {
            say("\(error)")
            if case .inUse = error { throw ExitCode(cannotOpen) }
            if code(opening: error) == keyProblem { throw ExitCode(keyProblem) }
            throw ExitCode(Failure.error)
        } catch {
            say(describe(error))
            throw ExitCode(Failure.error)
        }
    }

    /// One line for any error: a Foundation file error as its path and the system's reason,
    /// never its domain, code and user info.
    static func describe(_ error: any Error) -> String {
        if let error = error as? CocoaError {
            #if canImport(FoundationEssentials)
            var reason = cocoaErrorDescriptions[error.code.rawValue].map { "The operation could not be completed. \($0)" }
                ?? "The operation could not be completed. (NSCocoaErrorDomain error \(error.code.rawValue).)"
            #else
            var reason = error.localizedDescription   // full Foundation's own, richer where it has one
            #endif
            if let underlying = error.underlying as? POSIXError { reason = String(cString: strerror(underlying.code.rawValue)) }
            return error.filePath.map { "\($0): \(reason)" } ?? reason
        }
        if let error = error as? POSIXError { return String(cString: strerror(error.code.rawValue)) }
        return "\(error)"
    }
}

/// What full Foundation's `localizedDescription` said for a file `CocoaError` with no POSIX
/// error under it (after "The operation could not be completed. "); other codes read
/// "(NSCocoaErrorDomain error N.)". Written out because `localizedDescription` is full
/// Foundation, which would link ICU and its data (~37 MB) into the static tool.
private let cocoaErrorDescriptions: [Int: String] = [
    4: "The file doesn’t exist.",
    255: "The file couldn’t be locked.",
    257: "You don’t have permission.",
    258: "The file name is invalid.",
    259: "The file isn’t in the correct format.",
    260: "The file doesn’t exist.",
    261: "The specified text encoding isn’t applicable.",
    262: "The specified URL type isn’t supported.",
    263: "The item is too large.",
    264: "The text encoding of the contents couldn’t be determined.",
    513: "You don’t have permission.",
    514: "The file name is invalid.",
    516: "A file with the same name already exists.",
    517: "The specified text encoding isn’t applicable.",
    518: "The specified URL type isn’t supported.",
    640: "There isn’t enough space.",
    642: "The volume is read only.",
    3072: "The operation was cancelled.",
    3328: "The requested operation is not supported.",
]
