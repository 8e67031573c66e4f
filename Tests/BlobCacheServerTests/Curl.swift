import Foundation

/// `curl` run as a child process: one request, its status, headers and body.
enum Curl {
    struct Response {
        let status: Int
        let headers: String
        let body: [UInt8]

        /// A header's value (case-insensitive name), from the last response head.
        func header(_ name: String) -> String? {
            for line in headers.split(separator: "\r\n").reversed() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    /// Sends `method` to `url` with `body` (a file, so any bytes go as they are).
    static func request(_ method: String, _ url: String, body: [UInt8]? = nil, extra: [String] = []) throws -> Response {
        let scratchDirectory = try ScratchDirectory("curl")
        let scratch = scratchDirectory.path
        var arguments = ["-sS", "-o", scratch + "/body", "-D", scratch + "/headers", "-w", "%{http_code}"]
        if method == "HEAD" { arguments.append("-I") } else { arguments += ["-X", method] }
        if let body {
            _ = FileManager.default.createFile(atPath: scratch + "/upload", contents: Data(body))
            arguments += ["--data-binary", "@" + scratch + "/upload", "-H", "Content-Type: application/octet-stream"]
        }
        let result = try Run.run("curl", arguments + extra + [url])
        guard result.status == 0, let status = Int(result.output) else {
            throw Failure("curl \(method) \(url) failed (\(result.status)): \(result.output)")
        }
        // With -I curl writes the head to -o as well: a HEAD reply has no body to report.
        let bytes = method == "HEAD" ? [] : FileManager.default.contents(atPath: scratch + "/body").map { [UInt8]($0) } ?? []
        let headers = (try? String(contentsOfFile: scratch + "/headers", encoding: .utf8)) ?? ""
        return Response(status: status, headers: headers, body: bytes)
    }
}
