import NIOCore
import NIOHTTPTypes

/// One per connection, in its pipeline: counts it among the open connections, and closes it
/// when a reply has waited `stallTimeout` for the client to read (a client that stops reading
/// a large reply would otherwise hold its connection, and its request's resources, for ever).
/// Hummingbird's idle timeout covers the other silences: before a request's head is complete,
/// between body reads, and between requests.
final class ConnectionWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let metrics: ServerMetrics
    private let stallTimeout: TimeAmount
    private var stalled: Scheduled<Void>?
    private var counted = false

    init(metrics: ServerMetrics, stallTimeout: TimeAmount) {
        self.metrics = metrics
        self.stallTimeout = stallTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        counted = true
        metrics.connectionsChanged(by: 1)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        release()
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    /// Stops the timer and uncounts the connection, once, whichever of the two comes first.
    private func release() {
        stalled?.cancel()
        stalled = nil
        if counted {
            counted = false
            metrics.connectionsChanged(by: -1)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stalled?.cancel()
            stalled = nil
        } else if stalled == nil {
            let channel = context.channel
            stalled = context.eventLoop.scheduleTask(in: stallTimeout) { channel.close(promise: nil) }
        }
        context.fireChannelWritabilityChanged()
    }
}
