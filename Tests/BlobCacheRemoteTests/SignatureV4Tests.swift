@testable import BlobCacheRemote
import Foundation
import Testing

/// The S3 signer against AWS's published Signature Version 4 vectors (Tests/Fixtures) and S3's
/// own worked examples.
struct SignatureV4Tests {
    static let suite = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/aws-sig-v4-test-suite").standardized
    /// The vectors whose files AWS computed inconsistently (see the fixtures' README).
    static let inconsistent: Set<String> = ["post-x-www-form-urlencoded", "post-x-www-form-urlencoded-parameters"]

    /// Every vector's folder, by name.
    static let vectors: [String] = {
        let files = FileManager.default.enumerator(atPath: suite.path)?.compactMap { $0 as? String } ?? []
        return files.filter { $0.hasSuffix(".req") }.map { String($0.dropLast(4)) }.sorted()
    }()

    static let example = SignatureV4(credentials: AWSCredentials(accessKeyID: "AKIDEXAMPLE",
                                                                 secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
                                     region: "us-east-1", service: "service")

    @Test("all the suite's vectors are here")
    func suiteIsComplete() {
        #expect(Self.vectors.count == 31)
    }

    @Test("each AWS vector: canonical request, string to sign and Authorization header", arguments: vectors)
    func vector(_ path: String) throws {
        func read(_ suffix: String) throws -> String { try String(contentsOf: Self.suite.appendingPathComponent(path + suffix), encoding: .utf8) }
        let (request, timestamp) = try Self.parse(read(".req"))
        let sts = try read(".sts")
        let authz = try read(".authz")
        let name = String(path.split(separator: "/").last!)
        if Self.inconsistent.contains(name) {
            #expect(authz.hasSuffix("Signature=" + Self.example.signature(of: sts, on: timestamp.date)))
            return
        }
        #expect(SignatureV4.canonicalRequest(request).text == (try read(".creq")))
        #expect(Self.example.stringToSign(canonicalRequest: SignatureV4.canonicalRequest(request).text, at: timestamp) == sts)
        #expect(Self.example.authorization(for: request, at: timestamp) == authz)
    }

    /// A `.req` file as the signer takes it: a generic service's request, its path normalised.
    static func parse(_ text: String) throws -> (SignatureV4.Request, AWSTimestamp) {
        let (head, body) = text.firstRange(of: "\n\n").map { (text[..<$0.lowerBound], text[$0.upperBound...]) } ?? (text[...], "")
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let requestLine = lines.removeFirst()
        let method = String(requestLine.prefix { $0 != " " })
        let target = String(requestLine.dropFirst(method.count + 1).dropLast(" HTTP/1.1".count))
        let path = String(target.prefix { $0 != "?" })
        let query = target.dropFirst(path.count + 1).split(separator: "&").map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (name: String(parts[0]).removingPercentEncoding!, value: parts.count > 1 ? String(parts[1]).removingPercentEncoding! : "")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            if line.first == " ", let last = headers.last {
                headers.append((last.name, line))   // a folded line: one more value of the header before
            } else {
                let colon = try #require(line.firstIndex(of: ":"))
                headers.append((String(line[..<colon]), String(line[line.index(after: colon)...])))
            }
        }
        let date = try #require(headers.first { $0.name.lowercased() == "x-amz-date" }?.value)
        let request = SignatureV4.Request(method: method, canonicalURI: SignatureV4.canonicalURI(path: path, normalizing: true),
                                          query: query, headers: headers, payloadHash: SignatureV4.hexSHA256(Array(body.utf8)))
        return (request, AWSTimestamp(dateTime: date))
    }

    /// S3's worked examples: access key AKIAIOSFODNN7EXAMPLE, 24 May 2013, bucket examplebucket.
    static let s3 = SignatureV4(credentials: AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                                                            secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
                                region: "us-east-1", service: "s3")

    @Test("S3's examples: GET with a range, PUT of test$file.text, GET ?lifecycle, GET ?max-keys=2&prefix=J",
          arguments: [
            ("GET", "/test.txt", [(String, String)](), [("Range", "bytes=0-9")], "",
             "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"),
            ("PUT", "/test$file.text", [], [("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
             "Welcome to Amazon S3.", "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"),
            ("GET", "/", [("lifecycle", "")], [], "", "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"),
            ("GET", "/", [("max-keys", "2"), ("prefix", "J")], [], "", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
          ])
    func s3Example(method: String, path: String, query: [(String, String)], headers: [(String, String)], body: String, signature: String) {
        let payloadHash = SignatureV4.hexSHA256(Array(body.utf8))
        let timestamp = AWSTimestamp(dateTime: "20130524T000000Z")
        let request = SignatureV4.Request(
            method: method, canonicalURI: SignatureV4.canonicalURI(path: path), query: query.map { (name: $0.0, value: $0.1) },
            headers: [("Host", "examplebucket.s3.amazonaws.com"), ("x-amz-content-sha256", payloadHash), ("x-amz-date", timestamp.dateTime)]
                + headers.map { (name: $0.0, value: $0.1) },
            payloadHash: payloadHash)
        #expect(Self.s3.authorization(for: request, at: timestamp).hasSuffix("Signature=" + signature))
    }

    @Test("S3 paths are encoded once and never normalised; the timestamp is UTC")
    func s3Paths() {
        #expect(SignatureV4.canonicalURI(path: "/bucket/a b/./../c+d=~é") == "/bucket/a%20b/./../c%2Bd%3D~%C3%A9")
        #expect(SignatureV4.canonicalURI(path: "/a/./b/../c//", normalizing: true) == "/a/c/")
        #expect(AWSTimestamp(Date(timeIntervalSince1970: 1_369_353_600)).dateTime == "20130524T000000Z")
        #expect(AWSTimestamp(Date(timeIntervalSince1970: 951_825_599.9)).dateTime == "20000229T115959Z")
    }
}
