import BlobCache
import Crypto
import Hummingbird
import HTTPTypes
import Logging
import Synchronization

/// Answers one request against the cache: GET, HEAD, PUT and DELETE of a key, the server's
/// routes (`/status`, `/metrics`, `/healthz`), and the two WebDAV methods sccache's client
/// sends before a PUT (MKCOL, PROPFIND).
///
///     let reply = await responder.respond(to: request, target: RequestTarget(path: request.uri.path))
struct CacheResponder: Sendable {
    let cache: BlobCache
    let maxBodyBytes: Int
    let listen: @Sendable () -> String
    let logger: Logger
    let metrics: ServerMetrics
    let requests = RequestCounter()

    /// The reply to `request`; never throws (a failure becomes a 4xx or 5xx reply).
    func respond(to request: Request, target: RequestTarget) async -> Reply {
        requests.increment()
        switch target {
        case .invalid(let reason):
            return .text(.badRequest, reason)
        case .route(let route):
            guard request.method == .get || request.method == .head else {
                return .methodNotAllowed(request.method, allow: "GET, HEAD")
            }
            let headOnly = request.method == .head
            switch route {
            case .status: return await status(headOnly: headOnly)
            case .metrics: return await metricsText(headOnly: headOnly)
            case .healthz: return await health(headOnly: headOnly)
            }
        case .root:
            switch request.method {
            case WebDAV.propfind: return WebDAV.properties(path: "/", size: nil, modified: .now)
            case WebDAV.mkcol: return WebDAV.makeCollection()
            default: return .text(.badRequest, "empty key: the path names no key")
            }
        case .key(let key, let sha256):
            switch request.method {
            case .get: return await get(key, headOnly: false, sha256: sha256)
            case .head: return await get(key, headOnly: true, sha256: sha256)
            case .put:
                var reply = await put(key, request: request, sha256: sha256)
                // A PUT refused part way (413, a short body, a failure) left its body unread.
                if reply.status.code >= 400 { reply.closesConnection = true }
                return reply
            case .delete: return await delete(key)
            case WebDAV.mkcol: return WebDAV.makeCollection()
            case WebDAV.propfind: return await propfind(key, path: request.uri.path)
            default: return .methodNotAllowed(request.method, allow: "GET, HEAD, PUT, DELETE")
            }
        }
    }

    /// 200 with the bytes, or only the length for HEAD; 404 when absent. A `/cas/` value is
    /// sent only when its SHA-256 is the one its path names (whatever put it there). A value of
    /// more than one chunk is sent as it is read (`StreamedValue`): damage found part way, or a
    /// `/cas/` digest that does not match at the end, closes the connection before the last byte.
    private func get(_ key: String, headOnly: Bool, sha256: String? = nil) async -> Reply {
        let cache = self.cache
        do {
            if headOnly && sha256 == nil {
                guard let entry = try await DiskQueue.run({ try cache.entry(forKey: key) }) else { return .text(.notFound, "no entry") }
                return Reply(status: .ok, contentType: "application/octet-stream", length: entry.size, headOnly: true)
            }
            // A memory-tier hit is answered on this thread; only a file read goes to the disk queue.
            if let bytes = cache.memoryValue(forRawKey: key) { return whole(bytes, key: key, headOnly: headOnly, sha256: sha256) }
            guard let reader = try await DiskQueue.run({ try cache.openValue(forKey: key) }) else {
                return .text(.notFound, "no entry")
            }
            if headOnly {
                defer { reader.close() }
                guard let sha256, try await StreamedValue.sha256(of: reader) == sha256 else {
                    logger.warning("HEAD \(key): the stored value's SHA-256 is not the one its /cas/ path names; answered as a miss")
                    return .text(.notFound, "no entry")
                }
                return Reply(status: .ok, contentType: "application/octet-stream", length: reader.length, headOnly: true)
            }
            if reader.length <= Self.wholeReplyLimit || reader.isWhole {
                // One chunk (or a value read whole already): checked before the head is sent,
                // so damage or a wrong digest is still a clean 404.
                var bytes: [UInt8] = []
                while let chunk = try await DiskQueue.run({ try reader.next() }) { bytes += chunk }
                return whole(bytes, key: key, headOnly: false, sha256: sha256)
            }
            return .streaming(length: reader.length, contentType: "application/octet-stream",
                              StreamedValue.body(reader, sha256: sha256, key: key, logger: logger))
        } catch BlobCacheError.corruptBlob(let id, _, let reason) {
            // The library dropped the damaged entries; to a client this is a miss it can refill.
            logger.warning("GET \(key): blob \(id) was corrupt (\(reason)); answered as a miss")
            return .text(.notFound, "no entry")
        } catch {
            return failure(error, key: key)
        }
    }

    /// Values up to this size are read whole before the reply's head is sent.
    static let wholeReplyLimit = 1 << 20

    /// The reply for a value read whole: 404 when a `/cas/` digest does not match.
    private func whole(_ bytes: [UInt8], key: String, headOnly: Bool, sha256: String?) -> Reply {
        if let sha256, Self.sha256Hex(of: bytes) != sha256 {
            logger.warning("GET \(key): the stored value's SHA-256 is not the one its /cas/ path names; answered as a miss")
            return .text(.notFound, "no entry")
        }
        if headOnly { return Reply(status: .ok, contentType: "application/octet-stream", length: bytes.count, headOnly: true) }
        return Reply(status: .ok, contentType: "application/octet-stream", body: ByteBuffer(bytes: bytes))
    }

    /// Stores the body as it arrives, in bounded memory: 201 for a new key, 204 for a replaced
    /// one; 413 once it passes the body limit (or the cache's cap); 400 when a `/cas/` body's
    /// SHA-256 is not the one its path names. Nothing is stored unless the whole body arrived.
    private func put(_ key: String, request: Request, sha256: String?) async -> Reply {
        if let declared = BodyReader.declaredLength(of: request), declared > maxBodyBytes {
            return .text(.contentTooLarge, "request body over the server's limit of \(maxBodyBytes) bytes (--max-body)")
        }
        let cache = self.cache
        let pending: PendingSet
        do {
            pending = try await DiskQueue.run { try cache.startSet(forKey: key) }
        } catch {
            return failure(error, key: key)
        }
        var received = 0
        var digest = sha256.map { _ in SHA256() }
        var batch: [UInt8] = []
        do {
            for try await chunk in request.body {
                received += chunk.readableBytes
                guard received <= maxBodyBytes else {
                    await Self.cancel(pending)
                    var reply = Reply.text(.contentTooLarge, "request body over the server's limit of \(maxBodyBytes) bytes (--max-body)")
                    reply.loggedBytes = received
                    return reply
                }
                chunk.withUnsafeReadableBytes { bytes in
                    digest?.update(bufferPointer: bytes)
                    batch.append(contentsOf: bytes)
                }
                // Handed to the cache a batch at a time: one hop to the disk queue per batch.
                if batch.count >= Self.putBatch {
                    let full = batch
                    batch = []
                    try await DiskQueue.run { try pending.append(full) }
                }
            }
        } catch let error as BlobCacheError {
            await Self.cancel(pending)
            var reply = failure(error, key: key)
            reply.loggedBytes = received
            return reply
        } catch {
            await Self.cancel(pending)
            logger.warning("PUT \(key): reading the body failed: \(error)")
            return .text(.badRequest, "the request body could not be read")
        }
        // The HTTP layer ends a body cut short with an error; a declared length is checked all the same.
        if let declared = BodyReader.declaredLength(of: request), declared != received {
            await Self.cancel(pending)
            return .text(.badRequest, "the request body has \(received) bytes, not the \(declared) its Content-Length declares")
        }
        if let sha256, let digest {
            let actual = Self.hex(digest.finalize())
            guard actual == sha256 else {
                await Self.cancel(pending)
                var reply = Reply.text(.badRequest, "body's SHA-256 is \(actual), not the \(sha256) its /cas/ path names")
                reply.loggedBytes = received
                return reply
            }
        }
        do {
            let last = batch
            let existed = try await DiskQueue.run {
                try pending.append(last)
                let existed = try cache.entry(forKey: key) != nil
                try pending.finish()
                return existed
            }
            var reply = Reply(status: existed ? .noContent : .created)
            reply.loggedBytes = received
            return reply
        } catch {
            await Self.cancel(pending)
            var reply = failure(error, key: key)
            reply.loggedBytes = received
            return reply
        }
    }

    /// Abandons a set on the disk queue: cancelling waits for pieces being written and deletes
    /// the staging file, which is no work for an event loop.
    private static func cancel(_ pending: PendingSet) async {
        _ = try? await DiskQueue.run { pending.cancel() }
    }

    /// How many body bytes a PUT gathers before handing them to the cache.
    static let putBatch = 256 << 10

    /// Lowercase hex of `bytes`' SHA-256, as Bazel names `/cas/` entries.
    static func sha256Hex(of bytes: [UInt8]) -> String { hex(SHA256.hash(data: bytes)) }

    /// Lowercase hex of a digest.
    static func hex(_ digest: SHA256.Digest) -> String { HexDigit.lowercase(digest) }

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

    /// Prometheus' text format.
    private func metricsText(headOnly: Bool) async -> Reply {
        let cache = self.cache
        let metrics = self.metrics
        do {
            let text = try await DiskQueue.run { try metrics.exposition(cache: cache) }
            return Reply(status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8", body: ByteBuffer(bytes: text), headOnly: headOnly)
        } catch {
            return failure(error, key: "metrics")
        }
    }

    /// 200 when the cache is open and its directory can be written, 503 with the reason otherwise.
    private func health(headOnly: Bool) async -> Reply {
        let cache = self.cache
        let problem: String?
        do {
            problem = try await DiskQueue.run { HealthCheck.problem(with: cache) }
        } catch {
            problem = "the health check could not run"
        }
        guard let problem else { return Reply(status: .ok, contentType: "text/plain; charset=utf-8", body: ByteBuffer(string: "ok\n"), headOnly: headOnly) }
        logger.warning("health check: \(problem)")
        var reply = Reply.text(.serviceUnavailable, problem)
        if headOnly { reply.body = nil; reply.loggedBytes = 0 }
        return reply
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
    /// bytes is 409 (nothing was stored), a full disk or quota is 507, anything else is the
    /// server's (500). Server-side failures are logged in full; the client gets no path of
    /// this machine.
    private func failure(_ error: any Error, key: String) -> Reply {
        switch error {
        case BlobCacheError.invalidKey(let reason):
            return .text(.badRequest, "invalid key: \(reason)")
        case BlobCacheError.valueTooLarge(let stored, let limit):
            return .text(.contentTooLarge, "the value takes \(stored) bytes stored, over the cache's limit of \(limit)")
        case BlobCacheError.contentCollision(let id):
            logger.warning("PUT \(key): \(error)")
            return .text(.conflict, "another value with the same MD5 (\(id)) is stored; this one was not")
        case BlobCacheError.io(_, _, let errno) where errno == .noSpace || errno == .diskQuotaExceeded:
            logger.warning("\(key): \(error)")
            return .text(.insufficientStorageStatus, "the cache's disk is full; nothing was stored")
        default:
            logger.warning("\(key): \(error)")
            return .text(.internalServerError, "the server could not do this; its log says why")
        }
    }
}

/// Requests answered since the server started (for `/status`).
final class RequestCounter: Sendable {
    private let count = Atomic<Int>(0)

    func increment() { count.add(1, ordering: .relaxed) }

    var value: Int { count.load(ordering: .relaxed) }
}
