import ArgumentParser
import BlobCache

/// Keys as the shell passed them. Swift decodes each argument as UTF-8 and replaces bytes that
/// are not with U+FFFD, which would store `$'\xff'` and `$'\xfe'` under one key: an argument
/// decoded that way is detected here and never used as a key.
enum KeyArgument {
    /// Whether `key` is an argument exactly as given: no argument that is not valid UTF-8
    /// decodes (with U+FFFD for its bad bytes) to it. A U+FFFD the user typed is a key.
    ///
    ///     guard KeyArgument.isExact(key) else { … }
    static func isExact(_ key: String) -> Bool {
        guard key.unicodeScalars.contains("\u{FFFD}") else { return true }
        for index in 0..<Int(CommandLine.argc) {
            guard let raw = CommandLine.unsafeArgv[index], String(validatingCString: raw) == nil else { continue }
            if String(cString: raw).utf8.elementsEqual(key.utf8) { return false }
        }
        return true
    }

    /// Refuses a key to store under that is not valid UTF-8: one line, exit 64 (changing it
    /// would store the value under another key).
    ///
    ///     try KeyArgument.refuseUnlessExact(key)
    static func refuseUnlessExact(_ key: String, named name: String = "KEY") throws {
        guard isExact(key) else {
            Failure.say("\(name) is not valid UTF-8; a key is stored as its exact bytes, so it is refused rather than changed")
            throw ExitCode.validationFailure
        }
    }

    /// For a command that reads or removes: a key that is not valid UTF-8 can never have been
    /// stored, so it is a miss (`no entry`), never another key's value.
    ///
    ///     if !KeyArgument.isExact(key) { /* miss */ }
    static func missMessage(_ key: String) -> String {
        "no entry for key '\(BlobCache.escapedKey(key))' (it is not valid UTF-8, which no key can be)"
    }
}
