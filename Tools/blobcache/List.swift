import ArgumentParser
import BlobCache
import Foundation

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List entries, least recently used first: key, blob id, size, stored size, expiry, last access.",
        discussion: "Tab-separated; tab, newline and backslash in a key are shown as \\t, \\n, \\\\. --json prints an array of objects (keys unescaped).")

    @Flag(help: "Print a JSON array.") var json = false
    @OptionGroup var global: GlobalOptions

    struct Row: Encodable {
        let key: String
        let blob: String
        let size: Int
        let storedSize: Int
        let expiry: String?
        let lastAccess: String
        let pinned: Bool
    }

    func run() throws {
        let cache = try global.open()
        let entries = try Failure.running { try cache.entries() }.filter { !$0.key.hasPrefix("\u{0}") }
        try Failure.running { try cache.close() }
        let rows = entries.map {
            Row(key: $0.key, blob: $0.blobID.hex, size: $0.size, storedSize: $0.storedSize,
                expiry: $0.expiry.map(Output.timestamp), lastAccess: Output.timestamp($0.lastAccess), pinned: $0.pinned)
        }
        if json { return try Output.json(rows) }
        var text = ""
        for row in rows {
            text += "\(BlobCache.escapedKey(row.key))\t\(row.blob)\t\(row.size)\t\(row.storedSize)\t\(row.expiry ?? "never")\t\(row.lastAccess)\n"
        }
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
