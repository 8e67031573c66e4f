import Dispatch
import Hummingbird
import Synchronization
import HTTPTypes

/// Decides whether a request is answered at all, before it touches the cache: its Host must be
/// one the server answers (`HostCheck`), and with an auth file its credentials must allow it.
/// `/healthz` needs neither: it says only whether the cache can be written.
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
        // /healthz answers any Host: probes (a kubelet's, a load balancer's) name the address
        // they connect to, and it says only whether the cache can be written.
        let isHealth = target == .route(.healthz)
        guard isHealth || hosts.admits(request.head.authority) else {
            return .refused(.text(.misdirectedRequest, "this server does not answer for that Host (blobcache serve --allow-host NAME)"))
        }
        guard let credentials else { return .admitted(credential: nil) }
        if isHealth { return .admitted(credential: nil) }
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
            // A password's first check derives its hash: not on an event loop, and not on the
            // disk queue, whose threads a flood of guesses would otherwise take from every read
            // and write. At most `maxWaitingChecks` wait; past that the client is told to retry.
            switch await CredentialChecks.check(presented, against: credentials) {
            case .busy:
                var busy = Reply.text(.serviceUnavailable, "too many credentials are being checked; retry")
                busy.headers[.retryAfter] = "1"
                return .refused(busy)
            case .checked(let checked):
                grant = checked
            }
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

/// Where passwords are checked: one thread of its own, so the cache's disk queue never waits
/// behind a derivation, with a bound on how many checks may wait.
enum CredentialChecks {
    private static let queue = DispatchQueue(label: "BlobCacheServer.credentials", qos: .utility)
    private static let waiting = Atomic<Int>(0)
    /// Checks waiting or running at most; more are answered 503 at once.
    static let maxWaitingChecks = 64

    /// What a check found: the grant (nil: refused), or too many checks waiting.
    enum Outcome {
        case checked(Credentials.Grant?)
        case busy
    }

    static func check(_ value: String, against credentials: Credentials) async -> Outcome {
        guard waiting.add(1, ordering: .relaxed).newValue <= maxWaitingChecks else {
            waiting.subtract(1, ordering: .relaxed)
            return .busy
        }
        defer { waiting.subtract(1, ordering: .relaxed) }
        let grant = try? await DiskQueue.run(on: queue) { credentials.access(forAuthorization: value) }
        return .checked(grant ?? nil)
    }
}
