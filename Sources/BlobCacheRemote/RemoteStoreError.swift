/// Why a remote store call failed. The cache logs it, counts it and skips the remote for a
/// while; it never reaches a local operation.
///
///     do { try store.put(.blob(id), bytes: image, expiresAt: nil) } catch let error as RemoteStoreError { print(error) }
public enum RemoteStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL names no store this module has (`http://`, `https://`, `s3://bucket/prefix`, `redis://host:port/prefix`).
    case invalidURL(String, reason: String)
    /// The HTTP server answered a PUT or DELETE with a status outside 2xx.
    case unexpectedStatus(method: String, url: String, status: Int)
    /// The S3 server answered outside 2xx (`code`: S3's error code, such as
    /// `SignatureDoesNotMatch`, or empty).
    case s3(method: String, url: String, status: Int, code: String)
    /// The Redis connection or command failed: the node, and the server's or the connection's
    /// message (never a password).
    case redis(String)
    /// A blocking call was made on a SwiftNIO event loop, which it would stall (or deadlock).
    case calledOnEventLoop

    /// One line for logs and the CLI.
    public var description: String {
        switch self {
        case .invalidURL(let url, let reason): "invalid remote URL '\(url)': \(reason)"
        case .unexpectedStatus(let method, let url, let status): "\(method) \(url) answered \(status)"
        case .s3(let method, let url, let status, let code): "\(method) \(url) answered \(status)\(code.isEmpty ? "" : " \(code)")"
        case .redis(let message): "redis: \(message)"
        case .calledOnEventLoop: "a remote store was called on a SwiftNIO event loop; call the cache from another thread"
        }
    }
}
