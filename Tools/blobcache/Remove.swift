import ArgumentParser
import BlobCache

struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Remove keys. Exit 0 when all existed, 1 when some did not.")

    @Argument(help: "The keys.") var keys: [String]
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if keys.isEmpty { throw ValidationError("name at least one KEY") }
        if keys.contains(where: \.isEmpty) { throw ValidationError("KEY must not be empty") }
    }

    func run() throws {
        let cache = try global.open(for: .removing)
        var missing = 0
        for key in keys where try !KeyArgument.isExact(key) || !Failure.running({ try global.keySpace(of: cache).removeValue(forKey: key) }) {
            Failure.say("no entry for key '\(BlobCache.escapedKey(key))'")
            missing += 1
        }
        try Failure.running { try cache.close() }
        if missing > 0 { throw ExitCode(Failure.notFound) }
    }
}
