/// An upstream's address, from an `http://` or `https://` URL.
public struct UpstreamURL: Sendable, Hashable, CustomStringConvertible {
    public let isTLS: Bool
    public let host: String
    public let port: Int
    /// Path and query, at least "/".
    public let path: String

    public init?(_ text: String) {
        let scheme: Substring, rest: Substring
        if text.hasPrefix("http://") { scheme = "http"; rest = text.dropFirst(7) }
        else if text.hasPrefix("https://") { scheme = "https"; rest = text.dropFirst(8) }
        else { return nil }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        var pathPart = String(rest.dropFirst(authority.count))
        if pathPart.isEmpty || pathPart.first == "?" { pathPart = "/" + pathPart }
        var host = authority
        var port = scheme == "https" ? 443 : 80
        if host.hasPrefix("[") {  // [IPv6]:port
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") { guard let p = Int(after.dropFirst()) else { return nil }; port = p }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            guard let p = Int(host[host.index(after: colon)...]) else { return nil }
            port = p
            host = host[..<colon]
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        isTLS = scheme == "https"
        self.host = String(host)
        self.port = port
        path = pathPart
    }

    /// The URL with `path` appended to this one's path.
    public func appending(_ suffix: String) -> UpstreamURL {
        let base = path.hasSuffix("/") ? String(path.dropLast()) : path
        return UpstreamURL(isTLS: isTLS, host: host, port: port, path: base + suffix)
    }

    private init(isTLS: Bool, host: String, port: Int, path: String) {
        self.isTLS = isTLS
        self.host = host
        self.port = port
        self.path = path
    }

    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (isTLS ? 443 : 80) ? name : "\(name):\(port)"
    }

    var poolKey: String { "\(isTLS ? "s" : "")\(host):\(port)" }

    public var description: String { "\(isTLS ? "https" : "http")://\(hostHeader)\(path)" }
}
