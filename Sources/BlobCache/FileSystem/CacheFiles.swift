import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The name of every file and folder under a cache directory (docs/FORMAT.md, "Files"), so
/// that no other code spells one.
///
///     let files = CacheFiles(root: "/var/cache/app")
///     files.loosePath(of: id)      // /var/cache/app/objects/5/d/5d41402a…
struct CacheFiles: Sendable, Hashable {
    let root: FilePath

    init(root: FilePath) { self.root = root }

    /// The journal, `DIR/journal`.
    var journal: FilePath { root.appending("journal") }
    /// The index snapshot, `DIR/index`.
    var snapshot: FilePath { root.appending("index") }
    /// The single-writer lock, `DIR/lock`.
    var lock: FilePath { root.appending("lock") }
    /// Counters saved by clean closes, `DIR/stats`.
    var stats: FilePath { root.appending("stats") }
    /// Default limits, `DIR/config`.
    var config: FilePath { root.appending("config") }
    /// Loose blobs, `DIR/objects/<a>/<b>/<id>`.
    var objects: FilePath { root.appending("objects") }
    /// Pack segments, `DIR/packs/NNNNNN.pack`.
    var packs: FilePath { root.appending("packs") }

    /// Files at the top of the directory that belong to the cache (besides `objects/`, `packs/`
    /// and the temporaries of `temporary(for:)`).
    var topLevelFiles: [FilePath] { [journal, snapshot, lock, stats, config] }

    /// `objects/<a>/<b>/<id>` for a loose blob.
    func loosePath(of id: BlobID) -> FilePath {
        let hex = id.hex
        let first = String(hex.prefix(1)), second = String(hex.dropFirst().prefix(1))
        return objects.appending(first).appending(second).appending(hex)
    }

    /// `packs/NNNNNN.pack`.
    func segmentPath(_ number: UInt32) -> FilePath { packs.appending(PackFormat.fileName(of: number)) }

    /// The temporary name a whole-file replacement of `path` writes first: `path.tmp`.
    static func temporary(for path: FilePath) -> FilePath { FilePath(path.string + ".tmp") }

    /// A fresh temporary name for a loose blob staged beside its final place:
    /// `tmp.<pid>.<random>` in the blob's shard directory.
    static func stagingPath(beside final: FilePath) -> FilePath {
        final.removingLastComponent().appending("\(stagingPrefix)\(getpid()).\(UInt64.random(in: 0...UInt64.max) & 0xffff_ffff_ffff)")
    }

    /// Whether a file name is a staged blob's temporary name.
    static func isStagingName(_ name: String) -> Bool { name.hasPrefix(stagingPrefix) }

    /// Whether a staging name was made by this process (whose in-flight sets may still own it).
    static func isOwnStagingName(_ name: String) -> Bool { name.hasPrefix("\(stagingPrefix)\(getpid()).") }

    private static let stagingPrefix = "tmp."
}
