import Hummingbird
import HTTPTypes
import Logging

/// The request log: one debug line per request (method, path, status, bytes, duration).
///
///     RequestLog.record(request, reply, since: start, logger: logger)
enum RequestLog {
    static func record(_ request: Request, _ reply: Reply, since start: ContinuousClock.Instant, logger: Logger) {
        guard logger.logLevel <= .debug else { return }
        let elapsed = ContinuousClock.now - start
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        let duration = (milliseconds * 100).rounded() / 100
        logger.debug("\(request.method.rawValue) \(request.uri.path) \(reply.status.code) \(reply.loggedBytes) bytes \(duration) ms")
    }
}
