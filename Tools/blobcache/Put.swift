import ArgumentParser
import BlobCache
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

struct Put: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Store FILE (or standard input) under KEY; prints the blob id.")

    @Argument(help: "The key.") var key: String
    @Argument(help: "The file to store (anything readable: a FIFO, /dev/null, <(cmd)); standard input when omitted or -.") var file: String?
    @Option(help: ArgumentHelp("Expire the entry after this many seconds.", valueName: "SECONDS")) var ttl: Double?
    @Option(help: ArgumentHelp("Codec for a new blob: lz4, zlib or none.", valueName: "CODEC")) var codec: String?
    @Flag(help: "Pin the entry: never evicted, kept by clear unless --include-pinned.") var pin = false
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if key.isEmpty { throw ValidationError("KEY must not be empty") }
        try KeyArgument.refuseUnlessExact(key)
        if let codec, Codec(name: codec) == nil { throw ValidationError("unknown codec '\(codec)': use lz4, zlib or none") }
        if let ttl, !(ttl > 0 && ttl <= 1e12) {
            throw ValidationError("--ttl must be a positive number of seconds, at most 1e12 (about 31,700 years)")
        }
    }

    func run() throws {
        // Opened first: a file that cannot be read creates no cache. Then read as it is
        // stored, a megabyte at a time, so a value of any size takes bounded memory and a
        // value over --max-size stops the read as soon as it has passed the cap.
        let input = try Streams.openInput(file ?? "-")
        defer { input.close() }
        let cache = try global.open(for: .filling, codec: codec.flatMap(Codec.init(name:)))
        let expiry = ttl.map { Expiry.after(.milliseconds(Int64($0 * 1000))) }
        let id: BlobID
        do {
            id = try Failure.running {
                let pending = try global.keySpace(of: cache).startSet(forKey: key, expiry: expiry, pinned: pin)
                try input.feed(pending)
                return try pending.finish()
            }
        } catch {
            // Closed all the same, so that the statistics keep what the refused set counted.
            try? cache.close()
            throw error
        }
        try Failure.running { try cache.close() }
        print(id.hex)
    }
}
