/// Which Host headers the server answers. A web page can make a browser send requests to a
/// loopback server through a name the page's owner controls (DNS rebinding); such a request
/// carries that name as its Host, so a loopback server answers only loopback names and
/// addresses, and the names given with `--allow-host`.
///
///     let check = HostCheck(listeningOn: address, allowed: ["cache.internal"])
///     if !check.admits(request.head.authority) { … 421 … }
struct HostCheck: Sendable {
    /// Lowercased names allowed besides loopback ones; nil admits every Host.
    private let allowed: Set<String>?

    init(listeningOn address: ListenAddress, allowed names: [String]) {
        if names.isEmpty && !Self.isLoopback(address.host) {
            allowed = nil
        } else {
            allowed = Set(names.map { $0.lowercased() })
        }
    }

    /// Whether a request whose Host is `authority` (nil when it sent none) is answered.
    func admits(_ authority: String?) -> Bool {
        guard let allowed else { return true }
        // HTTP/1.0 clients send no Host; a browser always does, so none is no rebinding.
        guard let authority, !authority.isEmpty else { return true }
        var host = Self.hostPart(of: authority.lowercased())
        if host.hasSuffix(".") { host.removeLast() }  // the fully qualified spelling of the same name
        return Self.isLoopback(host) || allowed.contains(host)
    }

    /// `authority` without its port (and without the brackets of an IPv6 address).
    static func hostPart(of authority: String) -> String {
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            return String(authority[authority.index(after: authority.startIndex)..<close])
        }
        if let colon = authority.lastIndex(of: ":"), authority.firstIndex(of: ":") == colon {
            return String(authority[..<colon])
        }
        return authority
    }

    /// `localhost`, a name under `.localhost`, `::1`, or an address in 127.0.0.0/8.
    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
