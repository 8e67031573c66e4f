import Foundation
import Testing
@testable import BlobCache

/// Private by default: what BlobCache creates is the owner's alone, unless
/// the cache directory is one the owner's group may read, write and enter.
@Suite("Permissions")
struct PermissionTests {
    /// Every path below `root` (itself included) with its mode bits.
    private func modes(below root: String) -> [(path: String, mode: mode_t, directory: Bool)] {
        var result: [(String, mode_t, Bool)] = []
        var info = stat()
        func visit(_ path: String) {
            guard lstat(path, &info) == 0 else { return }
            let directory = info.st_mode & S_IFMT == S_IFDIR
            result.append((path, info.st_mode & 0o7777, directory))
            if directory { for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] { visit(path + "/" + name) } }
        }
        visit(root)
        return result
    }

    /// Expects every path below `root` (itself included) to have the mode given for its kind.
    private func expectModes(below root: String, directories: mode_t, files: mode_t, atLeast count: Int = 1,
                             _ context: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        let seen = modes(below: root)
        #expect(seen.count >= count, "\(seen.map(\.path))", sourceLocation: sourceLocation)
        for (path, mode, directory) in seen {
            #expect(mode == (directory ? directories : files), "\(context)\(path): \(String(mode, radix: 8))",
                    sourceLocation: sourceLocation)
        }
    }

    /// Fills a cache at `path` with every kind of file it makes.
    private func useEveryFile(_ path: String, _ change: (inout BlobCache.Configuration) -> Void = { _ in }) throws {
        var configuration = BlobCache.Configuration()
        configuration.snapshotThreshold = 0
        change(&configuration)
        let cache = try BlobCache(directory: path, configuration: configuration)
        try cache.set(Samples.random(100_000, seed: 1), forKey: "loose")
        try cache.set(Samples.random(500, seed: 2), forKey: "packed")
        try cache.close()
        try BlobCache.saveDefaultLimits(.init(maxStoredBytes: 1 << 30), in: path)
    }

    @Test("a cache BlobCache creates, its missing parents and every file in it are the owner's alone (0700, 0600)")
    func privateByDefault() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("home/.cache/app")
        try useEveryFile(root)
        expectModes(below: dir.appending("home"), directories: 0o700, files: 0o600, atLeast: 12)
    }

    @Test("an existing directory keeps its mode; in a group-shared one the group may read and write every file, whatever the umask")
    func existingDirectoriesKeepTheirMode() throws {
        let dir = TemporaryDirectory()
        let plain = dir.appending("plain"), shared = dir.appending("shared")
        for (path, mode) in [(plain, 0o755), (shared, 0o2770)] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            #expect(chmod(path, mode_t(mode)) == 0)
            try useEveryFile(path)
        }
        for (path, mode, directory) in modes(below: plain) where path != plain {
            #expect(mode == (directory ? 0o700 : 0o600), "\(path): \(String(mode, radix: 8))")
        }
        #expect(modes(below: plain)[0].mode == 0o755)
        for (path, mode, directory) in modes(below: shared) where path != shared {
            // The group may read and write whatever the umask (022 would take group write away).
            #expect(mode == (directory ? 0o2770 : 0o660), "\(path): \(String(mode, radix: 8))")
        }
        #expect(modes(below: shared)[0].mode == 0o2770)
    }

    @Test("Configuration.shareWithGroup: the cache directory it creates, its parents and its files are the group's (2770, 0660)")
    func sharedWhenAsked() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("team/cache")
        try useEveryFile(root) { $0.shareWithGroup = true }
        expectModes(below: dir.appending("team"), directories: 0o2770, files: 0o660, atLeast: 10)
    }

    @Test("blobcache config --share-with-group on opens an existing cache to the group, off closes it again")
    func shareExistingCache() throws {
        let dir = TemporaryDirectory()
        let root = dir.appending("cache")
        try useEveryFile(root)
        let cli = CLI(directory: root)
        let on = try cli.run(["config", "--share-with-group", "on"])
        #expect(on.status == 0, "\(on.stderr)")
        #expect(on.output.contains("shared with group: yes"))
        expectModes(below: root, directories: 0o2770, files: 0o660)
        let cache = try BlobCache(directory: root)
        try cache.set(Samples.random(300, seed: 3), forKey: "later")
        try cache.set(Samples.random(90_000, seed: 4), forKey: "later-loose")
        try cache.close()
        expectModes(below: root, directories: 0o2770, files: 0o660, "made after sharing: ")
        let off = try cli.run(["config", "--share-with-group", "off"])
        #expect(off.status == 0, "\(off.stderr)")
        expectModes(below: root, directories: 0o700, files: 0o600)
        #expect(try cli.run(["config", "--share-with-group", "maybe"]).status == 64)
    }
}
