import ArgumentParser
import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Store every regular file under PATHs; key = prefix + path relative to the argument.",
        discussion: "A PATH that is a file (or a link to one) is stored under prefix + its name; a PATH that is a directory (or a link to one) gives every regular file under it, its key the path below PATH. Under a directory, symbolic links, pipes, sockets and devices are skipped and file systems mounted inside are not entered; a file whose name is not UTF-8 is skipped with one line on standard error and the import ends with exit 2. A key two PATHs both hold takes the later PATH's file. Files are read, hashed and compressed on every core; the first file or directory that cannot be read, or value the cache refuses, stops the import (exit 2, or 8/9 as for any command). Progress goes to standard error: a bar on a terminal, otherwise a line every 1,000 files.")

    @Argument(help: "Files or directories.") var paths: [String]
    @Option(help: ArgumentHelp("Prefix for every key.", valueName: "P")) var prefix = ""
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if paths.isEmpty { throw ValidationError("name at least one PATH") }
    }

    func run() throws {
        var files: [ImportFiles.File] = []
        var notUTF8: [String] = []
        var links = 0, special = 0
        for argument in paths {
            #if canImport(FoundationEssentials)
            var isDirectory = false
            #else
            var isDirectory: ObjCBool = false
            #endif
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else {
                Failure.say("\(argument) does not exist")
                throw ExitCode(Failure.error)
            }
            if !Bool(isDirectory) {
                files.append(.init(key: prefix + Formatting.lastPathComponent(argument), path: argument, followingLink: true))
                continue
            }
            let root = URL(fileURLWithPath: argument).standardizedFileURL.path
            let listing: FileTree.Listing
            do { listing = try FileTree.regularFiles(under: root) } catch {
                Failure.say("\(error)")
                throw ExitCode(Failure.error)
            }
            files += listing.files.map { .init(key: prefix + $0, path: root + "/" + $0, followingLink: false) }
            notUTF8 += listing.notUTF8.map { root + "/" + $0 }
            (links, special) = (links + listing.links, special + listing.special)
        }
        for path in notUTF8 { Failure.say("skipping \(path): its name is not UTF-8, so no key can name it") }
        // A key two PATHs both hold takes the later PATH's file. Keys are told apart by their
        // bytes, as the cache does (String equality would take `é` and `e` + U+0301 for one).
        var latest: [[UInt8]: Int] = [:]
        for (index, file) in files.enumerated() { latest[Array(file.key.utf8)] = index }
        // In key order, as before the import ran on every core: files near in the tree land
        // near in the packs, which an export (in key order) then reads in sequence.
        let unique = latest.values.map { files[$0] }.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        let cache = try global.open(for: .filling)
        let total = unique.count, terminal = Output.isTerminal, quiet = global.quiet
        let outcome = ImportFiles(files: unique, space: global.keySpace(of: cache)).run { done in
            if quiet { return }
            if terminal {
                if done % 64 == 0 || done == total { Output.progress(done, of: total, label: "import") }
            } else if done % 1000 == 0 {
                Streams.writeStandardError("import: \(done)/\(total) files\n")
            }
        }
        let bytes: Int
        switch outcome {
        case .success(let stored): bytes = stored
        case .failure(.unreadable(let reason)):
            Failure.say(reason)
            throw ExitCode(Failure.error)
        case .failure(.refused(let error)):
            try Failure.running { throw error }
            return
        }
        let totals = try Failure.running { try cache.totals() }
        try Failure.running { try cache.close() }
        var skipped: [String] = []
        if !notUTF8.isEmpty { skipped.append("\(notUTF8.count) not UTF-8") }
        if links > 0 { skipped.append("\(links) symbolic \(links == 1 ? "link" : "links")") }
        if special > 0 { skipped.append("\(special) \(special == 1 ? "pipe, socket or device" : "pipes, sockets or devices")") }
        print("imported \(total) files, \(bytes) bytes; cache holds \(totals.entries) entries, \(totals.storedBytes) bytes stored"
              + (skipped.isEmpty ? "" : "; skipped " + skipped.joined(separator: ", ")))
        if !notUTF8.isEmpty { throw ExitCode(Failure.error) }
    }
}
