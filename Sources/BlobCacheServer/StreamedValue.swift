import BlobCache
import Crypto
import Hummingbird
import Logging

/// A stored value sent as it is read: each chunk goes to the client once the cache has checked
/// it, and the client's reading paces the disk (a client that stops reading holds one chunk
/// here and the connection's buffers). Damage found part way, or a `/cas/` value whose SHA-256
/// is not its name, ends the response by closing the connection before `Content-Length` bytes,
/// so that no client takes a short body for the value.
///
///     return .streaming(length: reader.length, contentType: "application/octet-stream",
///                       StreamedValue.body(reader, sha256: nil, key: key, logger: logger))
enum StreamedValue {
    /// Thrown from a body to abort its response.
    struct Aborted: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// The body for `reader`'s value. With `sha256`, the last chunk is held back until the
    /// digest of the whole value is known, and sent only if it is `sha256`.
    static func body(_ reader: ValueReader, sha256: String?, key: String, logger: Logger) -> ResponseBody {
        ResponseBody(contentLength: reader.length) { writer in
            defer { reader.close() }
            var digest = sha256.map { _ in SHA256() }
            var held: [UInt8]?
            do {
                while let chunk = try await DiskQueue.run({ try reader.next() }) {
                    if let previous = held { try await writer.write(ByteBuffer(bytes: previous)) }
                    digest?.update(data: chunk)
                    if digest == nil {
                        try await writer.write(ByteBuffer(bytes: chunk))
                    } else {
                        held = chunk
                    }
                }
            } catch let error as BlobCacheError {
                logger.warning("GET \(key): \(error); the connection is closed before the value's end")
                throw Aborted(reason: "\(error)")
            }
            if let sha256, let digest, CacheResponder.hex(digest.finalize()) != sha256 {
                logger.warning("GET \(key): the stored value's SHA-256 is not the one its /cas/ path names; the connection is closed before its end")
                throw Aborted(reason: "SHA-256 mismatch")
            }
            if let held { try await writer.write(ByteBuffer(bytes: held)) }
            try await writer.finish(nil)
        }
    }

    /// The SHA-256 of `reader`'s whole value, read a chunk at a time (HEAD of a `/cas/` key).
    static func sha256(of reader: ValueReader) async throws -> String {
        var digest = SHA256()
        while let chunk = try await DiskQueue.run({ try reader.next() }) { digest.update(data: chunk) }
        return CacheResponder.hex(digest.finalize())
    }
}
