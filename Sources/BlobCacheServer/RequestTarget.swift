/// What a request's path names: one of the server's own routes, or a cache key (with Bazel's
/// content check).
///
/// The server's routes are `/status`, `/metrics` and `/healthz`. Every key stays reachable:
/// a path starting with `/_/` names the key after that prefix as it is, so the key `status`
/// is `/_/status` and a key starting with `_/` is `/_/_/…`. Plain `/` is the root collection
/// a WebDAV client asks about.
///
///     let target = RequestTarget(path: "/cas/9f86d0...")   // .key("cas/9f86d0...", sha256: digest)
enum RequestTarget: Equatable {
    /// One of the server's own routes.
    case route(Route)
    /// `/`: the collection every key is in (WebDAV's PROPFIND asks for it).
    case root
    /// A cache key; `sha256` is the lowercase hex digest the body must have (Bazel's `/cas/`).
    case key(String, sha256: String?)
    /// A path that cannot be a key, with the one-line reason.
    case invalid(String)

    /// The server's own routes.
    enum Route: String, CaseIterable {
        /// The cache's figures as JSON.
        case status
        /// Prometheus' text format.
        case metrics
        /// 200 when the cache is open and writable, 503 otherwise.
        case healthz
    }

    /// The prefix that makes the rest of a path a key, whatever it is.
    static let keyEscape = "_/"

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
        guard var key = String(raw).percentDecoded else {
            self = .invalid("the path has malformed percent-encoding, or does not decode to valid UTF-8")
            return
        }
        if key.hasPrefix(Self.keyEscape) {
            key.removeFirst(Self.keyEscape.count)
        } else if let route = Route(rawValue: key) {
            self = .route(route)
            return
        } else if key.isEmpty {
            self = .root
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
