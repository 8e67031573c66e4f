import BlobCache
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`) for one request, as S3 and every AWS service
/// check it: a canonical form of the request, hashed into a string to sign, signed with a key
/// derived from the secret for one day, one region and one service. The steps and names follow
/// AWS's own description of the algorithm, so each can be checked against its published test
/// vectors.
///
///     let signer = SignatureV4(credentials: credentials, region: "us-east-1", service: "s3")
///     headers.add(name: "Authorization", value: signer.authorization(for: request, at: AWSTimestamp(Date())))
struct SignatureV4: Sendable {
    /// Who signs.
    let credentials: AWSCredentials
    /// The region in the credential scope (`us-east-1`).
    let region: String
    /// The service in the credential scope (`s3`).
    let service: String

    /// What of a request the signature covers.
    struct Request {
        /// `GET`, `PUT`, …
        var method: String
        /// The path exactly as sent: percent-encoded (`canonicalURI(path:normalizing:)`).
        var canonicalURI: String
        /// The query's names and values, not encoded.
        var query: [(name: String, value: String)] = []
        /// Every header to sign (`host` and `x-amz-date` among them), in any order and case.
        var headers: [(name: String, value: String)]
        /// The hex SHA-256 of the body, or `UNSIGNED-PAYLOAD`.
        var payloadHash: String
    }

    /// The algorithm's name, first in the string to sign and the `Authorization` header.
    static let algorithm = "AWS4-HMAC-SHA256"
    /// The hex SHA-256 of no bytes: the payload hash of a request without a body.
    static let emptyPayloadHash = hexSHA256([])

    /// The `Authorization` header's value for `request`, signed at `timestamp` (which its
    /// `x-amz-date` header must carry).
    func authorization(for request: Request, at timestamp: AWSTimestamp) -> String {
        let (canonical, signedHeaders) = Self.canonicalRequest(request)
        let signature = self.signature(of: stringToSign(canonicalRequest: canonical, at: timestamp), on: timestamp.date)
        return "\(Self.algorithm) Credential=\(credentials.accessKeyID)/\(scope(on: timestamp.date)), "
            + "SignedHeaders=\(signedHeaders), Signature=\(signature)"
    }

    /// The canonical request, and its signed headers' names (`host;x-amz-date`).
    static func canonicalRequest(_ request: Request) -> (text: String, signedHeaders: String) {
        let query = request.query
            .map { (uriEncode($0.name, keepingSlashes: false), uriEncode($0.value, keepingSlashes: false)) }
            .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
        // Names lowercased; values trimmed, inner runs of spaces made one; a name given twice
        // keeps both values, in order, joined by commas.
        var values: [String: [String]] = [:]
        for header in request.headers {
            let value = header.value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).joined(separator: " ")
            values[header.name.lowercased(), default: []].append(value)
        }
        let names = values.keys.sorted()
        let headers = names.map { "\($0):\(values[$0]!.joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")
        let text = [request.method, request.canonicalURI, query, headers, signedHeaders, request.payloadHash].joined(separator: "\n")
        return (text, signedHeaders)
    }

    /// The string to sign: the algorithm, the time, the credential scope and the canonical
    /// request's hash, one a line.
    func stringToSign(canonicalRequest: String, at timestamp: AWSTimestamp) -> String {
        [Self.algorithm, timestamp.dateTime, scope(on: timestamp.date), Self.hexSHA256(Array(canonicalRequest.utf8))]
            .joined(separator: "\n")
    }

    /// The hex HMAC-SHA256 of `stringToSign` under the key of `date` (`yyyyMMdd`).
    func signature(of stringToSign: String, on date: String) -> String {
        var key = SymmetricKey(data: Array("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [date, region, service, "aws4_request"] {
            key = SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key)))
        }
        return HexDigit.lowercase(HMAC<SHA256>.authenticationCode(for: Array(stringToSign.utf8), using: key))
    }

    /// `date/region/service/aws4_request`.
    private func scope(on date: String) -> String { "\(date)/\(region)/\(service)/aws4_request" }

    /// The hex SHA-256 of `bytes`.
    static func hexSHA256(_ bytes: [UInt8]) -> String { HexDigit.lowercase(SHA256.hash(data: bytes)) }

    /// `path` (not encoded) as a canonical URI: every byte but the unreserved ones and `/`
    /// percent-encoded, once. S3 signs the path so, as sent; `normalizing` first removes
    /// `.` and `..` segments and empty ones, as the other services do.
    ///
    ///     SignatureV4.canonicalURI(path: "/a b/ሴ")   // "/a%20b/%E1%88%B4"
    static func canonicalURI(path: String, normalizing: Bool = false) -> String {
        guard normalizing else { return uriEncode(path.isEmpty ? "/" : path, keepingSlashes: true) }
        var segments: [Substring] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch segment {
            case ".": continue
            case "..": _ = segments.popLast()
            default: segments.append(segment)
            }
        }
        let trailing = path.hasSuffix("/") && !segments.isEmpty ? "/" : ""
        return uriEncode("/" + segments.joined(separator: "/") + trailing, keepingSlashes: true)
    }

    /// `text`'s UTF-8 bytes with all but `A-Z a-z 0-9 - _ . ~` (and `/`, when kept) as `%XX`.
    static func uriEncode(_ text: String, keepingSlashes: Bool) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepingSlashes:
                encoded.append("/")
            default:
                encoded += "%" + HexDigit.uppercase(byte)
            }
        }
        return encoded
    }
}
