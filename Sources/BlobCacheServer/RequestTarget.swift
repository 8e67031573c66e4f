import Foundation

/// What a request's path names: the status page, or a cache key (with Bazel's content check).
///
///     let target = RequestTarget(path: "/cas/9f86d0...")   // .key("cas/9f86d0...", verify: digest)
enum RequestTarget: Equatable {
    /// `/status`: the cache's figures as JSON.
    case status
    /// A cache key; `sha256` is the lowercase hex digest the body must have (Bazel's `/cas/`).
    case key(String, sha256: String?)
    /// A path that cannot be a key, with the one-line reason.
    case invalid(String)

    /// Maps a request path (no query) to its target: the path without its leading `/`,
    /// percent-decoded, is the key. A path whose last-but-one segment is `cas` is a Bazel
    /// content-addressed entry and must end in 64 lowercase hex digits.
    init(path: String) {
        // The request line's bytes reach us decoded as UTF-8 with U+FFFD for bytes that are
        // not: such a path would name another key than the client's, so it names none.
        guard !path.unicodeScalars.contains("\u{FFFD}") else {
            self = .invalid("the path is not valid UTF-8 (percent-encode a U+FFFD meant as one)")
            return
        }
        var raw = Substring(path)
        if raw.hasPrefix("/") { raw = raw.dropFirst() }
        guard let key = String(raw).removingPercentEncoding else {
            self = .invalid("the path has malformed percent-encoding, or does not decode to valid UTF-8")
            return
        }
        if key == "status" {
            self = .status
            return
        }
        guard !key.isEmpty else {
            self = .invalid("empty key: the path names no key")
            return
        }
        guard !key.hasPrefix("\u{0}") else {
            self = .invalid("a key must not start with %00 (U+0000)")
            return
        }
        let segments = key.split(separator: "/", omittingEmptySubsequences: false)
        if segments.count >= 2, segments[segments.count - 2] == "cas" {
            let digest = segments[segments.count - 1]
            guard Self.isSHA256Hex(digest) else {
                self = .invalid("a /cas/ key must end in a SHA-256 digest: 64 lowercase hex digits")
                return
            }
            self = .key(key, sha256: String(digest))
            return
        }
        self = .key(key, sha256: nil)
    }

    /// Whether `text` is 64 lowercase hex digits.
    static func isSHA256Hex(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}
