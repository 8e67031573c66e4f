/// Where `blobcache serve` listens: a host name or IP address and a TCP port.
///
///     let address = try ListenAddress(parsing: "127.0.0.1:0")   // port 0: any free port
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host name or IP address, without brackets (`::1`, not `[::1]`).
    public var host: String
    /// The TCP port; 0 asks the system for any free port (the real one is reported once listening).
    public var port: Int

    /// The server's default: loopback only, port 8080.
    ///
    ///     let address = ListenAddress.default   // 127.0.0.1:8080
    public static let `default` = ListenAddress(host: "127.0.0.1", port: 8080)

    /// An address from its parts.
    ///
    ///     let address = ListenAddress(host: "0.0.0.0", port: 8080)
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or `[IPv6]:PORT`; throws `ListenAddress.Invalid` with a one-line reason.
    ///
    ///     let address = try ListenAddress(parsing: "[::1]:9000")
    public init(parsing text: String) throws {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw Invalid(text: text, reason: "expected [IPv6]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw Invalid(text: text, reason: "expected HOST:PORT") }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { throw Invalid(text: text, reason: "write an IPv6 address in brackets, [::1]:PORT") }
        }
        guard !host.isEmpty, !host.contains(where: \.isWhitespace) else {
            throw Invalid(text: text, reason: "the host is empty or has spaces")
        }
        guard let port = Int(portText), (0...65_535).contains(port) else {
            throw Invalid(text: text, reason: "the port must be a number from 0 to 65535")
        }
        self.init(host: String(host), port: port)
    }

    /// `HOST:PORT`, with brackets around an IPv6 host.
    ///
    ///     print("http://\(address)")
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// A `--listen` value that is not `HOST:PORT`.
    ///
    ///     catch let error as ListenAddress.Invalid { print(error) }
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        /// The text given.
        public var text: String
        /// What is wrong with it.
        public var reason: String

        /// `invalid listen address 'x': reason`.
        ///
        ///     print(error.description)
        public var description: String { "invalid listen address '\(text)': \(reason)" }
    }
}
