import ArgumentParser
import BlobCache
import Foundation

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Store every regular file under PATHs; key = prefix + path relative to the argument.",
        discussion: "A PATH that is a file is stored under prefix + its name. Progress goes to standard error: a bar on a terminal, otherwise a line every 1,000 files.")

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
            let walker = FileManager.default.enumerator(atPath: root)
            while let relative = walker?.nextObject() as? String {
                let full = root + "/" + relative
                if let type = walker?.fileAttributes?[.type] as? FileAttributeType, type == .typeRegular {
                    files.append((prefix + relative, full))
                }
            }
        }
        files.sort { $0.key < $1.key }
        let cache = try global.open()
        var bytes = 0
        for (done, file) in files.enumerated() {
            guard let value = FileManager.default.contents(atPath: file.path) else {
                Failure.say("cannot read \(file.path)")
                throw ExitCode(Failure.error)
            }
            try Failure.running { _ = try global.keySpace(of: cache).set(value, forKey: file.key, expiry: nil, pinned: false) }
            bytes += value.count
            if Output.isTerminal {
                if done % 64 == 0 || done + 1 == files.count { Output.progress(done + 1, of: files.count, label: "import") }
            } else if (done + 1) % 1000 == 0 {
                FileHandle.standardError.write(Data("import: \(done + 1)/\(files.count) files\n".utf8))
            }
        }
        let totals = try Failure.running { try cache.totals() }
        try Failure.running { try cache.close() }
        print("imported \(files.count) files, \(bytes) bytes; cache holds \(totals.entries) entries, \(totals.storedBytes) bytes stored")
    }
}
