import Hummingbird
import HTTPTypes

/// A response the server is about to write: status, headers and an optional body.
///
///     let reply = Reply.text(.badRequest, "empty key")
struct Reply: Sendable {
    var status: HTTPResponse.Status
    var headers = HTTPFields()
    var body: ByteBuffer?
    /// A body written as it is read (a large value), in place of `body`.
    var streamedBody: ResponseBody?
    /// The body bytes the request log reports (received for a PUT, sent otherwise).
    var loggedBytes = 0
    /// Whether the connection ends after this reply: it refuses a request whose body may not
    /// have been read, which the server will not read to its end for a client it refused.
    var closesConnection = false

    /// A reply with `body`, typed and sized; `headOnly` keeps the length but sends no bytes (HEAD).
    init(status: HTTPResponse.Status, contentType: String? = nil, body: ByteBuffer? = nil, length: Int? = nil, headOnly: Bool = false) {
        self.status = status
        if let contentType { headers[.contentType] = contentType }
        let size = length ?? body?.readableBytes ?? 0
        // 204 carries no body and, by RFC 9110, no Content-Length.
        if status != .noContent { headers[.contentLength] = String(size) }
        self.body = headOnly ? nil : body
        loggedBytes = headOnly ? 0 : size
    }

    /// A plain-text reply of one line (errors: 400, 405, 413, 500).
    static func text(_ status: HTTPResponse.Status, _ message: String) -> Reply {
        Reply(status: status, contentType: "text/plain; charset=utf-8", body: ByteBuffer(string: message + "\n"))
    }

    /// 405 naming the methods the target takes.
    static func methodNotAllowed(_ method: HTTPRequest.Method, allow: String) -> Reply {
        var reply = text(.methodNotAllowed, "method \(method.rawValue) not allowed here; use \(allow)")
        reply.headers[.allow] = allow
        return reply
    }

    /// The response head as Hummingbird writes it.
    var head: HTTPResponse { HTTPResponse(status: status, headerFields: headers) }

    /// A 200 reply of `length` bytes whose body `streamed` writes as it reads them.
    static func streaming(length: Int, contentType: String, _ streamed: ResponseBody) -> Reply {
        var reply = Reply(status: .ok, contentType: contentType, length: length)
        reply.streamedBody = streamed
        return reply
    }

    /// The response body as Hummingbird writes it.
    var responseBody: ResponseBody { streamedBody ?? body.map { ResponseBody(byteBuffer: $0) } ?? ResponseBody() }
}

extension HTTPResponse.Status {
    /// 507 Insufficient Storage (RFC 4918): the disk or quota is full.
    static var insufficientStorageStatus: Self { .init(code: 507, reasonPhrase: "Insufficient Storage") }
}
