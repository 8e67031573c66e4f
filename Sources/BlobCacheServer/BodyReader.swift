import Hummingbird
import HTTPTypes

/// Reads a request body into memory, refusing it once it passes a byte limit.
///
///     guard let bytes = try await BodyReader.collect(request, limit: 256 << 20) else { return .tooLarge }
enum BodyReader {
    /// The body's length as the client declared it (`Content-Length`), if it did.
    static func declaredLength(of request: Request) -> Int? {
        request.headers[.contentLength].flatMap { Int($0) }
    }

    /// The whole body, or `nil` when it is (or is declared to be) longer than `limit` bytes.
    /// When refused, the rest of the body is left for the server to discard.
    static func collect(_ request: Request, limit: Int) async throws -> [UInt8]? {
        let declared = declaredLength(of: request)
        if let declared, declared > limit { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(declared ?? 0)
        for try await chunk in request.body {
            guard bytes.count + chunk.readableBytes <= limit else { return nil }
            bytes.append(contentsOf: chunk.readableBytesView)
        }
        return bytes
    }

    /// Whether the client waits for `100 Continue` before sending a body the server will take
    /// (curl does for bodies over 1 MiB); a body over the limit gets its 413 without it.
    static func expectsContinue(_ request: Request, limit: Int) -> Bool {
        guard request.method == .put, request.headers[.expect]?.lowercased() == "100-continue" else { return false }
        return (declaredLength(of: request) ?? 0) <= limit
    }
}
