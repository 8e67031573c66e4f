import SystemPackage

/// Telling a cache's directory from any other, and marking it as a cache: `CACHEDIR.TAG`, as
/// the Cache Directory Tagging Specification (https://bford.info/cachedir/) has it, so that
/// `tar --exclude-caches`, borg and restic skip it. docs/SECURITY.md gives the rule.
///
///     try CacheDirectory.claim(files, io: io)   // throws for ~/project, passes for a cache
enum CacheDirectory {
    /// The tag's contents: the specification's signature line, then comments.
    static let tagContents = Array("""
        Signature: 8a477f597d28d172789f06886806bc55
        # This file is a cache directory tag created by BlobCache.
        # For information about cache directory tags, see https://bford.info/cachedir/

        """.utf8)

    /// Checks that the cache may use `files.root`: it holds a journal or `CACHEDIR.TAG`, or
    /// nothing but what a cache being created has (its lock, a tag being written). Anything
    /// else is someone else's directory, refused with `directoryUnusable` before a file is made.
    static func claim(_ files: CacheFiles, io: FileIO) throws {
        let names = try io.listDirectory(files.root)
        let tagName = files.tag.lastComponent!.string
        if names.contains(tagName) || names.contains(files.journal.lastComponent!.string) { return }
        let beingCreated: Set = [files.lock.lastComponent!.string, CacheFiles.temporary(for: files.tag).lastComponent!.string]
        let foreign = names.filter { !beingCreated.contains($0) }.sorted()
        guard foreign.isEmpty else {
            let shown = foreign.prefix(3).joined(separator: ", ") + (foreign.count > 3 ? ", …" : "")
            throw BlobCacheError.directoryUnusable(
                path: files.root.string,
                reason: "it is not empty (\(shown)) and holds neither a BlobCache journal nor \(tagName); "
                    + "use a new or empty directory (if it is a cache whose journal was lost, add \(tagName) to rebuild it)")
        }
    }

    /// Writes `CACHEDIR.TAG` when it is missing (caches made by earlier releases get one at
    /// their next open). Best effort: a cache without its tag still works.
    static func tagIfNeeded(_ files: CacheFiles, io: FileIO) {
        guard io.status(files.tag) == nil else { return }
        _ = try? tagContents.withUnsafeBytes { try io.replaceAtomically(files.tag, with: $0, durable: false) }
    }
}
