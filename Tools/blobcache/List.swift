import ArgumentParser
import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List entries, least recently used first: key, blob id, size, stored size, expiry, last access.",
        discussion: "Tab-separated; tab, newline and backslash in a key are shown as \\t, \\n, \\\\. --json prints an array of objects (keys unescaped).")

    @Argument(help: "List only the keys that start with PREFIX (compared byte by byte).") var prefix: String?
    @Flag(help: "Print a JSON array.") var json = false
    @Flag(help: "List the namespaces instead: name, entries, distinct blobs, logical bytes, stored bytes.")
    var namespaces = false
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

    struct NamespaceRow: Encodable {
        let name: String
        let entries: Int
        let blobs: Int
        let logicalBytes: Int
        let storedBytes: Int
    }

    func run() throws {
        if namespaces { return try listNamespaces() }
        let cache = try global.open(for: .reading)
        let all = try Failure.running { try global.keySpace(of: cache).entries() }
        let entries = prefix.map { prefix in all.filter { $0.key.utf8.starts(with: prefix.utf8) } } ?? all
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
        try Streams.writeStandardOutput(text)
    }

    private func listNamespaces() throws {
        let cache = try global.open(for: .reading)
        let figures = try Failure.running { try cache.namespaceTotals() }
        try Failure.running { try cache.close() }
        let rows = figures.sorted { $0.key < $1.key }.map {
            NamespaceRow(name: $0.key, entries: $0.value.entries, blobs: $0.value.blobs,
                         logicalBytes: $0.value.logicalBytes, storedBytes: $0.value.storedBytes)
        }
        if json { return try Output.json(rows) }
        let text = rows.map { "\(BlobCache.escapedKey($0.name))\t\($0.entries)\t\($0.blobs)\t\($0.logicalBytes)\t\($0.storedBytes)\n" }.joined()
        try Streams.writeStandardOutput(text)
    }
}
