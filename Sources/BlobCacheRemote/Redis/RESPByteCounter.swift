import NIOCore
import Synchronization

/// Counts the bytes of replies arriving on a connection (after TLS), for its pool to tell a
/// command that failed before any answer (safe to send again elsewhere) from one that failed
/// midway through it.
///
///     try channel.pipeline.syncOperations.addHandler(counter)   // before the decoder
final class RESPByteCounter: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let total = Atomic<Int>(0)

    /// The bytes seen so far.
    var count: Int { total.load(ordering: .acquiring) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        total.add(unwrapInboundIn(data).readableBytes, ordering: .releasing)
        context.fireChannelRead(data)
    }
}
