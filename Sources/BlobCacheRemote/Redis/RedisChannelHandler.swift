import NIOCore

/// One command on its way: its encoded bytes, the shape its reply may take, and the promise
/// its reply completes.
struct RedisRequest {
    let bytes: ByteBuffer
    let shape: RESPShape
    let promise: EventLoopPromise<RESPValue>
}

/// Matches replies to commands, first in first out (RESP answers in order). Any failure of the
/// connection (a decoding refusal, a TLS error, a reset, the close a timeout makes) fails every
/// command still waiting, with that failure, and closes the channel: a connection whose
/// stream is in doubt is never used again.
final class RedisChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = RESPValue
    typealias OutboundIn = RedisRequest
    typealias OutboundOut = ByteBuffer

    private let expectations: RESPExpectations
    private var waiting: [EventLoopPromise<RESPValue>] = []
    private var failure: (any Error)?
    /// Where the first failure is also kept for the calling thread.
    private let firstFailure: RedisFirstFailure

    init(expectations: RESPExpectations, firstFailure: RedisFirstFailure) {
        self.expectations = expectations
        self.firstFailure = firstFailure
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        if let failure {
            request.promise.fail(failure)
            promise?.fail(failure)
            return
        }
        expectations.append(request.shape)
        waiting.append(request.promise)
        context.write(wrapOutboundOut(request.bytes), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let value = unwrapInboundIn(data)
        guard !waiting.isEmpty else { return }  // the decoder refuses unasked-for replies first
        waiting.removeFirst().succeed(value)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(with: error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(with: RESPDecodingError(description: "the server closed the connection"))
        context.fireChannelInactive()
    }

    private func fail(with error: any Error) {
        if failure == nil {
            failure = error
            firstFailure.record(error)
        }
        let promises = waiting
        waiting.removeAll()
        for promise in promises { promise.fail(failure ?? error) }
    }
}
