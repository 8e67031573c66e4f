import BlobCache
import Crypto
import Hummingbird
import HTTPTypes
import Logging
import Synchronization

/// Answers one request against the cache: GET, HEAD, PUT and DELETE of a key, `GET /status`,
/// and the two WebDAV methods sccache's client sends before a PUT (MKCOL, PROPFIND).
///
///     let reply = await responder.respond(to: request)
struct CacheResponder: Sendable {
    let cache: BlobCache
    let maxBodyBytes: Int
    let listen: @Sendable () -> String
    let logger: Logger
    let requests = RequestCounter()

    /// The reply to `request`; never throws (a failure becomes a 4xx or 5xx reply).
    func respond(to request: Request) async -> Reply {
        requests.increment()
        switch RequestTarget(path: request.uri.path) {
        case .invalid(let reason):
            return .text(.badRequest, reason)
        case .status:
            guard request.method == .get || request.method == .head else {
                return .methodNotAllowed(request.method, allow: "GET, HEAD")
            }
            return await status(headOnly: request.method == .head)
        case .key(let key, let sha256):
            switch request.method {
            case .get: return await get(key, headOnly: false, sha256: sha256)
            case .head: return await get(key, headOnly: true, sha256: sha256)
            case .put: return await put(key, request: request, sha256: sha256)
            case .delete: return await delete(key)
            case WebDAV.mkcol: return WebDAV.makeCollection()
            case WebDAV.propfind: return await propfind(key, path: request.uri.path)
            default: return .methodNotAllowed(request.method, allow: "GET, HEAD, PUT, DELETE")
            }
        }
    }

    /// 200 with the bytes, or only the length for HEAD; 404 when absent. A `/cas/` value is
    /// sent only when its SHA-256 is the one its path names (whatever put it there).
    private func get(_ key: String, headOnly: Bool, sha256: String? = nil) async -> Reply {
        let cache = self.cache
        do {
            if headOnly && sha256 == nil {
                guard let entry = try await DiskQueue.run({ try cache.entry(forKey: key) }) else { return .text(.notFound, "no entry") }
                return Reply(status: .ok, contentType: "application/octet-stream", length: entry.size, headOnly: true)
            }
            // A memory-tier hit is answered on this thread; only a file read goes to the disk queue.
            var found = cache.memoryValue(forRawKey: key)
            if found == nil { found = try await DiskQueue.run({ try cache.bytes(forKey: key) }) }
            guard let bytes = found else { return .text(.notFound, "no entry") }
            if let sha256, Self.sha256Hex(of: bytes) != sha256 {
                logger.warning("GET \(key): the stored value's SHA-256 is not the one its /cas/ path names; answered as a miss")
                return .text(.notFound, "no entry")
            }
            if headOnly { return Reply(status: .ok, contentType: "application/octet-stream", length: bytes.count, headOnly: true) }
            return Reply(status: .ok, contentType: "application/octet-stream", body: ByteBuffer(bytes: bytes))
        } catch BlobCacheError.corruptBlob(let id, _, let reason) {
            // The library dropped the damaged entries; to a client this is a miss it can refill.
            logger.warning("GET \(key): blob \(id) was corrupt (\(reason)); answered as a miss")
            return .text(.notFound, "no entry")
        } catch {
            return failure(error, key: key)
        }
    }

    /// Stores the body: 201 for a new key, 204 for a replaced one; 413 over the body limit;
    /// 400 when a `/cas/` body's SHA-256 is not the one its path names.
    private func put(_ key: String, request: Request, sha256: String?) async -> Reply {
        let bytes: [UInt8]
        do {
            guard let body = try await BodyReader.collect(request, limit: maxBodyBytes) else {
                return .text(.contentTooLarge, "request body over the server's limit of \(maxBodyBytes) bytes (--max-body)")
            }
            bytes = body
        } catch {
            logger.warning("PUT \(key): reading the body failed: \(error)")
            return .text(.badRequest, "the request body could not be read")
        }
        if let sha256 {
            let actual = Self.sha256Hex(of: bytes)
            guard actual == sha256 else {
                var reply = Reply.text(.badRequest, "body's SHA-256 is \(actual), not the \(sha256) its /cas/ path names")
                reply.loggedBytes = bytes.count
                return reply
            }
        }
        let cache = self.cache
        do {
            let existed = try await DiskQueue.run {
                let existed = try cache.entry(forKey: key) != nil
                try cache.set(bytes, forKey: key)
                return existed
            }
            var reply = Reply(status: existed ? .noContent : .created)
            reply.loggedBytes = bytes.count
            return reply
        } catch {
            var reply = failure(error, key: key)
            reply.loggedBytes = bytes.count
            return reply
        }
    }

    /// Lowercase hex of `bytes`' SHA-256, as Bazel names `/cas/` entries.
    static func sha256Hex(of bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// 204 when the key was removed, 404 when it was absent.
    private func delete(_ key: String) async -> Reply {
        let cache = self.cache
        do {
            guard try await DiskQueue.run({ try cache.removeValue(forKey: key) }) else { return .text(.notFound, "no entry") }
            return Reply(status: .noContent)
        } catch {
            return failure(error, key: key)
        }
    }

    /// The cache's figures as JSON.
    private func status(headOnly: Bool) async -> Reply {
        let cache = self.cache
        let figures = BlobCache.StatisticsReport.Server(listen: listen(), maxBodyBytes: maxBodyBytes, requests: requests.value)
        do {
            let json = try await DiskQueue.run { try StatusReport.json(cache: cache, server: figures) }
            return Reply(status: .ok, contentType: "application/json", body: ByteBuffer(bytes: json), headOnly: headOnly)
        } catch {
            return failure(error, key: "status")
        }
    }

    /// PROPFIND: 207 for an entry (its length and date) or a path ending in `/` (a collection,
    /// which always exists here); 404 otherwise.
    private func propfind(_ key: String, path: String) async -> Reply {
        if key.hasSuffix("/") { return WebDAV.properties(path: path, size: nil, modified: .now) }
        let cache = self.cache
        do {
            guard let entry = try await DiskQueue.run({ try cache.entry(forKey: key) }) else { return .text(.notFound, "no entry") }
            return WebDAV.properties(path: path, size: entry.size, modified: entry.created)
        } catch {
            return failure(error, key: key)
        }
    }

    /// A library error as a reply: a refused key is the client's fault (400), a value larger
    /// than the cache could ever hold is 413, a value whose MD5 names a stored value with other
    /// bytes is 409 (nothing was stored), anything else is the server's (500, logged).
    private func failure(_ error: any Error, key: String) -> Reply {
        switch error {
        case BlobCacheError.invalidKey(let reason):
            return .text(.badRequest, "invalid key: \(reason)")
        case BlobCacheError.valueTooLarge:
            return .text(.contentTooLarge, "\(error)")
        case BlobCacheError.contentCollision:
            logger.warning("PUT \(key): \(error)")
            return .text(.conflict, "\(error)")
        default:
            logger.warning("\(key): \(error)")
            return .text(.internalServerError, "\(error)")
        }
    }
}

/// Requests answered since the server started (for `/status`).
final class RequestCounter: Sendable {
    private let count = Atomic<Int>(0)

    func increment() { count.add(1, ordering: .relaxed) }

    var value: Int { count.load(ordering: .relaxed) }
}
