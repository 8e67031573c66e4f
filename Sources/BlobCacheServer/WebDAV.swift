#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Hummingbird
import HTTPTypes

/// The little WebDAV sccache's client (OpenDAL) needs besides GET and PUT: before a PUT it asks
/// (PROPFIND) whether the parent "directory" exists and creates missing ones (MKCOL). Keys here
/// have no directories, so every path ending in `/` is reported as an existing collection and
/// MKCOL always succeeds.
///
///     case WebDAV.mkcol: return WebDAV.makeCollection()
enum WebDAV {
    /// The MKCOL method.
    static let mkcol = HTTPRequest.Method("MKCOL")!
    /// The PROPFIND method.
    static let propfind = HTTPRequest.Method("PROPFIND")!

    /// 201: collections are implicit.
    static func makeCollection() -> Reply { Reply(status: .created) }

    /// A 207 multistatus for one resource: a file of `size` bytes, or a collection when `size` is nil.
    static func properties(path: String, size: Int?, modified: Date) -> Reply {
        let kind = size == nil ? "<D:resourcetype><D:collection/></D:resourcetype>"
                               : "<D:resourcetype/><D:getcontentlength>\(size!)</D:getcontentlength>"
        let escaped = path.replacing("&", with: "&amp;").replacing("<", with: "&lt;")
        let xml = """
            <?xml version="1.0" encoding="utf-8"?>
            <D:multistatus xmlns:D="DAV:"><D:response><D:href>\(escaped)</D:href><D:propstat><D:prop>\
            \(kind)<D:getlastmodified>\(HTTPDate.string(from: modified))</D:getlastmodified>\
            </D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response></D:multistatus>

            """
        return Reply(status: HTTPResponse.Status(code: 207, reasonPhrase: "Multi-Status"), contentType: "application/xml; charset=utf-8", body: ByteBuffer(string: xml))
    }
}
