import Hummingbird
import HTTPTypes

/// Decides whether a request is answered at all, before it touches the cache: its Host must be
/// one the server answers (`HostCheck`), and with an auth file its credentials must allow it.
/// `/healthz` needs no credentials: it says only whether the cache can be written.
///
///     switch await gate.verdict(for: request, target: target) {
///     case .admitted(let name): …
///     case .refused(let reply): return reply
///     }
struct RequestGate: Sendable {
    let hosts: HostCheck
    let credentials: Credentials?
    let allowUnauthenticatedReads: Bool

    /// Whether the request goes on, and under which credential's name.
    enum Verdict {
        case admitted(credential: String?)
        case refused(Reply)
    }

    /// Methods that only read; every other one (PUT, DELETE, MKCOL, anything unknown) needs a
    /// credential that may write.
    static let readMethods: Set<HTTPRequest.Method> = [.get, .head, .options, WebDAV.propfind]

    func verdict(for request: Request, target: RequestTarget) async -> Verdict {
        guard hosts.admits(request.head.authority) else {
            return .refused(.text(.misdirectedRequest, "this server does not answer for that Host (blobcache serve --allow-host NAME)"))
        }
        guard let credentials else { return .admitted(credential: nil) }
        if case .route(.healthz) = target { return .admitted(credential: nil) }
        let writes = !Self.readMethods.contains(request.method)
        guard let presented = request.headers[.authorization] else {
            if !writes && allowUnauthenticatedReads { return .admitted(credential: nil) }
            return .refused(Self.unauthorized("this server needs credentials (HTTP Basic or a bearer token)"))
        }
        let grant: Credentials.Grant?
        switch credentials.check(remembered: presented) {
        case .checked(let remembered):
            grant = remembered
        case .unknown:
            // A password's first check derives its hash: not on an event loop.
            grant = try? await DiskQueue.run { credentials.access(forAuthorization: presented) }
        }
        guard let grant else {
            return .refused(Self.unauthorized("these credentials are not accepted"))
        }
        if writes && !grant.access.allowsWrites {
            return .refused(.text(.forbidden, "the credential '\(grant.name)' may read but not write"))
        }
        return .admitted(credential: grant.name)
    }

    /// 401 with the two schemes the server takes.
    private static func unauthorized(_ message: String) -> Reply {
        var reply = Reply.text(.unauthorized, message)
        reply.headers.append(HTTPField(name: .wwwAuthenticate, value: "Basic realm=\"blobcache\", charset=\"UTF-8\""))
        reply.headers.append(HTTPField(name: .wwwAuthenticate, value: "Bearer realm=\"blobcache\""))
        return reply
    }
}
