import BlobCache
@testable import BlobCacheRemote
import NIOCore
import Testing

/// The decoder's arithmetic holds at the extremes of the limits a store may be given.
struct RESPDecoderLimitTests {
    @Test("a bulk length near Int.max under a limit of Int.max waits for its bytes instead of overflowing")
    func lengthNearIntMax() throws {
        var decoder = RESPDecoder(limit: .max, expectations: RESPExpectations())
        var buffer = ByteBuffer(string: "$\(Int.max)\r\nabc")
        #expect(try decoder.decodeValue(&buffer, shape: .scalar) == nil)
        var almost = ByteBuffer(string: "$\(Int.max - 1)\r\nabc")
        #expect(try decoder.decodeValue(&almost, shape: .scalar) == nil)
    }

    @Test("a store's reply limit is clamped to 0 through maxReplyBytesCeiling")
    func clampedLimit() {
        #expect(RedisRemoteStore(maxReplyBytes: .max).maxReplyBytes == RedisRemoteStore.maxReplyBytesCeiling)
        #expect(RedisRemoteStore(maxReplyBytes: -1).maxReplyBytes == 0)
        #expect(RedisRemoteStore(cluster: [RedisEndpoint(host: "h")], maxReplyBytes: .max).maxReplyBytes == RedisRemoteStore.maxReplyBytesCeiling)
        #expect(RedisRemoteStore(maxReplyBytes: 1 << 20).maxReplyBytes == 1 << 20)
    }
}
