import ArgumentParser
import BlobCache
import Foundation

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Store every regular file under PATHs; key = prefix + path relative to the argument.",
        discussion: "A PATH that is a file is stored under prefix + its name. Only regular files are stored: symbolic links, pipes and devices under a PATH are skipped. A key two PATHs both hold takes the later PATH's file. Files are read, hashed and compressed on every core; the first that cannot be read or stored stops the import (exit 2). Progress goes to standard error: a bar on a terminal, otherwise a line every 1,000 files.")

    @Argument(help: "Files or directories.") var paths: [String]
    @Option(help: ArgumentHelp("Prefix for every key.", valueName: "P")) var prefix = ""
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if paths.isEmpty { throw ValidationError("name at least one PATH") }
    }

    func run() throws {
        var files: [(key: String, path: String)] = []
        for argument in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else {
                Failure.say("\(argument) does not exist")
                throw ExitCode(Failure.error)
            }
            if !isDirectory.boolValue {
                files.append((prefix + (argument as NSString).lastPathComponent, argument))
                continue
            }
            let root = URL(fileURLWithPath: argument).standardizedFileURL.path
            let relatives: [String]
            do { relatives = try FileTree.regularFiles(under: root) } catch {
                Failure.say("\(error)")
                throw ExitCode(Failure.error)
            }
            files += relatives.map { (prefix + $0, root + "/" + $0) }
        }
        // A key named twice (two PATHs holding the same relative path) takes the later PATH's file.
        var latest: [String: String] = [:]
        for file in files { latest[file.key] = file.path }
        let unique = latest.map { (key: $0.key, path: $0.value) }.sorted { $0.key < $1.key }
        let cache = try global.open()
        let total = unique.count
        let outcome = ImportFiles(files: unique, space: global.keySpace(of: cache)).run { done in
            if Output.isTerminal {
                if done % 64 == 0 || done == total { Output.progress(done, of: total, label: "import") }
            } else if done % 1000 == 0 {
                FileHandle.standardError.write(Data("import: \(done)/\(total) files\n".utf8))
            }
        }
        let bytes: Int
        switch outcome {
        case .success(let stored): bytes = stored
        case .failure(.unreadable(let path)):
            Failure.say("cannot read \(path)")
            throw ExitCode(Failure.error)
        case .failure(.refused(let error)):
            try Failure.running { throw error }
            return
        }
        let totals = try Failure.running { try cache.totals() }
        try Failure.running { try cache.close() }
        print("imported \(total) files, \(bytes) bytes; cache holds \(totals.entries) entries, \(totals.storedBytes) bytes stored")
    }
}
