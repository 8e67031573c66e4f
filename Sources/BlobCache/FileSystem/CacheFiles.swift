import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The name of every file and folder under a cache directory (docs/FORMAT.md,
/// "Directory layout"), so that no other code spells one.
///
///     let files = CacheFiles(root: CachePath(normalizing: "/var/cache/app"))
///     files.loosePath(of: id)      // /var/cache/app/objects/5/d/5d41402a…
struct CacheFiles: Sendable {
    let root: CachePath
    /// The journal, `DIR/journal`.
    let journal: CachePath
    /// The index snapshot, `DIR/index`.
    let snapshot: CachePath
    /// The operation lock, `DIR/lock` (`DirectoryLock`).
    let lock: CachePath
    /// The change sequence every open maps, `DIR/sequence` (`ChangeSequence`).
    let sequence: CachePath
    /// Counters saved by clean closes, `DIR/stats`.
    let stats: CachePath
    /// Default limits, `DIR/config`.
    let config: CachePath
    /// The cache directory tag, `DIR/CACHEDIR.TAG` (`CacheDirectory`).
    let tag: CachePath

    /// The regular files the cache keeps at the top of DIR (never followed if they are links).
    var ownFiles: [CachePath] { [journal, snapshot, lock, sequence, stats, config, tag] }
    /// Loose blobs, `DIR/objects/<a>/<b>/<id>`.
    let objects: CachePath
    /// Pack segments, `DIR/packs/NNNNNN.pack`.
    let packs: CachePath
    /// `objects/` as text ending in a slash: loose paths are made on every read, each as one
    /// string of the right capacity.
    private let objectsPrefix: String
    /// `tmp.<pid>.<token>.`: the start of this open's staging names. The random token tells
    /// this open's files from those of a crashed process that had the same pid.
    private let ownStagingPrefix: String

    init(root: CachePath) {
        self.root = root
        journal = root.appending("journal")
        snapshot = root.appending("index")
        lock = root.appending("lock")
        sequence = root.appending("sequence")
        stats = root.appending("stats")
        config = root.appending("config")
        tag = root.appending("CACHEDIR.TAG")
        objects = root.appending("objects")
        packs = root.appending("packs")
        objectsPrefix = objects.string + "/"
        ownStagingPrefix = "\(Self.stagingPrefix)\(getpid()).\(String(UInt32.random(in: 0...UInt32.max), radix: 16))."
    }

    /// `objects/<a>/<b>/<id>` for a loose blob.
    func loosePath(of id: BlobID) -> CachePath {
        let hex = id.hex
        var text = objectsPrefix
        text.reserveCapacity(text.utf8.count + 4 + hex.utf8.count)
        text.append(hex[hex.startIndex])
        text.append("/")
        text.append(hex[hex.index(after: hex.startIndex)])
        text.append("/")
        text.append(hex)
        return CachePath(text)
    }

    /// The two shard directories a loose blob lies in, upper first: `objects/<a>` and
    /// `objects/<a>/<b>`, built as `loosePath` is.
    func shardDirectories(of id: BlobID) -> (upper: CachePath, lower: CachePath) {
        let hex = id.hex
        var upper = objectsPrefix
        upper.append(hex[hex.startIndex])
        var lower = upper
        lower.append("/")
        lower.append(hex[hex.index(after: hex.startIndex)])
        return (CachePath(upper), CachePath(lower))
    }

    /// `packs/NNNNNN.pack`.
    func segmentPath(_ number: UInt32) -> CachePath { packs.appending(PackFormat.fileName(of: number)) }

    /// The temporary name a whole-file replacement of `path` writes first: `path.tmp`.
    static func temporary(for path: CachePath) -> CachePath { CachePath(path.string + ".tmp") }

    /// A fresh temporary name for a file staged beside its final place (a loose blob in its
    /// shard directory, a segment in `packs/`): `tmp.<pid>.<token>.<random>`.
    func stagingPath(beside final: CachePath) -> CachePath {
        stagingPath(in: final.removingLastComponent())
    }

    /// A fresh temporary name for a file staged in `directory` (see `stagingPath(beside:)`).
    func stagingPath(in directory: CachePath) -> CachePath {
        CachePath(directory.string + "/\(ownStagingPrefix)\(UInt64.random(in: 0...UInt64.max) & 0xffff_ffff_ffff)")
    }

    /// Whether a file name is a staged file's temporary name: `tmp.` and two or three
    /// dot-separated runs of lowercase hex digits (`tmp.<pid>.<token>.<n>`, or `tmp.<pid>.<n>`
    /// from earlier releases). Anything else starting with `tmp.` is not the cache's.
    static func isStagingName(_ name: String) -> Bool {
        guard name.hasPrefix(stagingPrefix) else { return false }
        let parts = name.utf8.dropFirst(stagingPrefix.utf8.count).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return (2...3).contains(parts.count) && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(isLowercaseHexDigit) }
    }

    /// Whether a name is one shard directory's: one lowercase hex digit.
    static func isShardName(_ name: String) -> Bool { name.utf8.count == 1 && name.utf8.allSatisfy(isLowercaseHexDigit) }

    private static func isLowercaseHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    /// Whether the process that made a staged file (the pid in its name) is gone, so that
    /// nothing will publish it any more: only such files are swept or reported. Files of a
    /// live process, this one included, may be a set in flight in another open.
    static func stagingOwnerIsGone(_ name: String) -> Bool {
        let parts = name.utf8.dropFirst(stagingPrefix.utf8.count).split(separator: UInt8(ascii: "."))
        guard let first = parts.first, let pid = Int32(String(decoding: first, as: UTF8.self)), pid > 0 else { return true }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    private static let stagingPrefix = "tmp."
}
