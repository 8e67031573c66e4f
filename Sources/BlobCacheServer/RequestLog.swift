import Hummingbird
import HTTPTypes
import Logging
import NIOCore

/// The request log: one line per request (method, path, status, bytes, duration, client, and
/// the credential's name when there is one), at info with `--access-log`, at debug otherwise.
///
///     RequestLog.record(request, reply, elapsed: elapsed, client: address, credential: nil, accessLog: true, logger: logger)
enum RequestLog {
    static func record(_ request: Request, _ reply: Reply, elapsed: Duration, client: SocketAddress?, credential: String?,
                       accessLog: Bool, logger: Logger) {
        let level: Logger.Level = accessLog ? .info : .debug
        guard logger.logLevel <= level else { return }
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        let duration = (milliseconds * 100).rounded() / 100
        let who = client?.ipAddress ?? "-"
        let user = credential ?? "-"
        logger.log(level: level, "\(who) \(user) \(request.method.rawValue) \(request.uri.path) \(reply.status.code) \(reply.loggedBytes) bytes \(duration) ms")
    }
}
