import Logging
import Synchronization

/// What the library logs while a command runs, on standard error as `blobcache: LEVEL: message`
/// (with its details in parentheses): the remote tier's warnings (a remote that failed or
/// returned something refused) by default, nothing with `-q`, everything from debug up with
/// `-v`. The commands report what they meet themselves (a damaged value is `get`'s error, an
/// `export`'s skipped key), so the library's other warnings would say it twice. A message is
/// printed once per command: a remote that is down says so once, not per key.
///
///     configuration.logger = CommandLog.logger(quiet: false, verbose: true)
struct CommandLog: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    private let printed: Printed
    /// Print every message at `logLevel` and above, not only the remote tier's (`-v`).
    var everything = false

    /// The messages printed so far (shared by every copy of the handler), behind the standard
    /// library's `Mutex` (full Foundation's `NSLock` would link ICU into the static tool).
    final class Printed: Sendable {
        private let seen = Mutex(Set<String>())
        func first(_ line: String) -> Bool { seen.withLock { $0.insert(line).inserted } }
    }

    /// The logger a command gives the cache: warnings, none (`quiet`) or debug (`verbose`).
    static func logger(quiet: Bool, verbose: Bool) -> Logger {
        let printed = Printed()
        var logger = Logger(label: "blobcache") { _ in CommandLog(logLevel: .warning, printed: printed, everything: verbose) }
        logger.logLevel = quiet ? .critical : verbose ? .debug : .warning
        return logger
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?,
             source: String, file: String, function: String, line: UInt) {
        let details = self.metadata.merging(metadata ?? [:]) { $1 }
        guard everything || details["remote"] != nil, printed.first("\(level)\(message)") else { return }
        let text = details
            .sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
        let line = "blobcache: \(level): \(message)" + (text.isEmpty ? "" : " (\(text))") + "\n"
        Streams.writeStandardError(line)
    }
}
