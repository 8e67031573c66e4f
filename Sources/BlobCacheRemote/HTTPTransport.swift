import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix

/// One HTTP client for a store, its timeouts the store's, shut down when the last copy of the
/// store goes. Calls block their thread until the whole response is in (or `timeout` passed),
/// so they are refused on a SwiftNIO event loop, which they would stall. A response body over
/// `maxBodyBytes` (at most 4 GiB, AsyncHTTPClient's limit) is an error.
final class HTTPTransport: Sendable {
    private let client: HTTPClient
    /// How long one call may take in all, connecting included.
    let timeout: Duration
    /// The largest response body taken; a longer one is an error.
    let maxBodyBytes: Int

    /// `followingRedirects`: whether a 3xx answer is followed (up to 5 times), as a plain HTTP
    /// server's may be; a signed request is not, since its signature names the host it was for.
    init(timeout: Duration, maxBodyBytes: Int, followingRedirects: Bool = true) {
        self.timeout = timeout
        self.maxBodyBytes = min(max(0, maxBodyBytes), 1 << 32)
        let nanoseconds = Self.nanoseconds(timeout)
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .nanoseconds(nanoseconds), read: .nanoseconds(nanoseconds)))
        if !followingRedirects { configuration.redirectConfiguration = .disallow }
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    deinit {
        // Without waiting: the last reference may go on any thread, an event loop's included.
        client.shutdown { _ in }
    }

    /// Sends `method` to `url` and waits for the whole response, within the timeout.
    func send(_ method: HTTPMethod, _ url: String, headers: HTTPHeaders = [:], body: [UInt8]? = nil) throws -> HTTPClient.Response {
        guard MultiThreadedEventLoopGroup.currentEventLoop == nil else { throw RemoteStoreError.calledOnEventLoop }
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(url: url, method: method, headers: headers, body: body.map { .bytes($0) })
        } catch {
            throw RemoteStoreError.invalidURL(url, reason: "\(error)")
        }
        let accumulator = ResponseAccumulator(request: request, maxBodySize: maxBodyBytes)
        let deadline = NIODeadline.now() + .nanoseconds(Self.nanoseconds(timeout))
        return try client.execute(request: request, delegate: accumulator, deadline: deadline).wait()
    }

    /// `duration` in nanoseconds, from 1 ms to a day.
    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(1_000_000, min(seconds, 86_400) * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
