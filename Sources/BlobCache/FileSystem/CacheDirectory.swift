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

    /// Checks that the cache may use `files.root`: it holds a BlobCache journal (a regular file
    /// that starts with the journal's magic) or a `CACHEDIR.TAG` that names BlobCache, or
    /// nothing but names a cache uses (a cache being created, one made by an earlier release
    /// whose journal was lost, limits saved before the first open; `lost+found` of a dedicated
    /// volume). Anything else is someone else's directory, refused with `directoryUnusable`
    /// before a file is made in it.
    static func claim(_ files: CacheFiles, io: FileIO) throws {
        func isOwn() -> Bool { holdsOwnJournal(files, io: io) || holdsOwnTag(files, io: io) }
        if isOwn() { return }
        let foreign = try io.listDirectory(files.root).filter { !cacheNames(files).contains($0) }.sorted()
        // Another process's open may have made its tag (renamed into place whole) or journal
        // between the look above and the listing: checked again before refusing.
        guard foreign.isEmpty || isOwn() else {
            let shown = foreign.prefix(3).map(BlobCache.escapedKey).joined(separator: ", ") + (foreign.count > 3 ? ", …" : "")
            let tag = files.tag.lastComponent!
            throw BlobCacheError.directoryUnusable(
                path: files.root.string,
                reason: "it is not empty (\(shown)) and is not a BlobCache cache (no BlobCache journal or \(tag)); "
                    + "use a new or empty directory (if it is a cache whose journal was lost, "
                    + "write a \(tag) that mentions BlobCache to rebuild it)")
        }
    }

    /// Whether `journal` is a regular file that starts with the journal's magic.
    private static func holdsOwnJournal(_ files: CacheFiles, io: FileIO) -> Bool {
        guard (try? io.isRegularFile(files.journal)) == true, let fd = try? io.openIfExists(files.journal) else { return false }
        defer { io.close(fd) }
        guard let head = try? io.read(fd, count: 4, at: 0, path: files.journal), head.count == 4 else { return false }
        return head.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) } == JournalFormat.magic
    }

    /// Whether `CACHEDIR.TAG` is a regular file that mentions BlobCache (other programs tag
    /// their caches too: a cargo `target/` is not this cache's).
    private static func holdsOwnTag(_ files: CacheFiles, io: FileIO) -> Bool {
        guard (try? io.isRegularFile(files.tag)) == true, let fd = try? io.openIfExists(files.tag) else { return false }
        defer { io.close(fd) }
        guard let text = try? io.read(fd, count: 1024, at: 0, path: files.tag) else { return false }
        return text.starts(with: tagContents.prefix(43)) && String(decoding: text, as: UTF8.self).contains("BlobCache")
    }

    /// The top-level names a cache uses besides its journal and tag (which must be its own).
    private static func cacheNames(_ files: CacheFiles) -> Set<String> {
        var names: Set<String> = ["lost+found"]
        for path in [files.lock, files.sequence, files.snapshot, files.stats, files.config, files.objects, files.packs] {
            names.insert(path.lastComponent!)
        }
        for path in [files.journal, files.snapshot, files.stats, files.config, files.tag] {
            names.insert(CacheFiles.temporary(for: path).lastComponent!)
        }
        return names
    }

    /// Writes `CACHEDIR.TAG` when it is missing (caches made by earlier releases get one at
    /// their next open). Best effort: a cache without its tag still works.
    static func tagIfNeeded(_ files: CacheFiles, io: FileIO) {
        guard io.status(files.tag) == nil else { return }
        _ = try? tagContents.withUnsafeBytes { try io.replaceAtomically(files.tag, with: $0, durable: false) }
    }
}
