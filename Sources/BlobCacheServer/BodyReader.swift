import Hummingbird
import HTTPTypes

/// What a request says of its body: its declared length, and whether the client waits for
/// `100 Continue` (a PUT's body itself streams into the cache, `CacheResponder.put`).
///
///     if BodyReader.expectsContinue(request, limit: maxBody) { … }
enum BodyReader {
    /// The body's length as the client declared it (`Content-Length`), if it did.
    static func declaredLength(of request: Request) -> Int? {
        request.headers[.contentLength].flatMap { Int($0) }
    }

    /// Whether the client waits for `100 Continue` before sending a body the server will take
    /// (curl does for bodies over 1 MiB); a body over the limit gets its 413 without it.
    static func expectsContinue(_ request: Request, limit: Int) -> Bool {
        guard request.method == .put, request.headers[.expect]?.lowercased() == "100-continue" else { return false }
        return (declaredLength(of: request) ?? 0) <= limit
    }
}
