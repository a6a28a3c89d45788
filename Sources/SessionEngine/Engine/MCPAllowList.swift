/// Which MCP servers a session may name: the operator's URL prefixes (`--mcp-allow`). A client
/// that could name any URL could make the server call into the operator's own network (its
/// metadata service, an admin port), so a server reachable from other hosts allows none unless
/// told (`RealtimeEndpoint`), and one bound to loopback only, whose clients are local, allows any.
///
/// A prefix matches on a boundary of the URL: `https://tools.example.com` allows
/// `https://tools.example.com/mcp` but not `https://tools.example.com.evil.net/`, and
/// `http://10.0.0.5:8000/mcp` not `http://10.0.0.5:8000/mcpx`. Scheme and host compare without case.
public struct MCPAllowList: Sendable, Equatable {
    public let prefixes: [String]
    public let allowsAny: Bool

    public static let any = MCPAllowList(prefixes: [], allowsAny: true)
    public static let none = MCPAllowList(prefixes: [], allowsAny: false)

    public init(prefixes: [String], allowsAny: Bool = false) {
        self.prefixes = prefixes.map(Self.normalised)
        self.allowsAny = allowsAny
    }

    public func allows(_ url: String) -> Bool {
        if allowsAny { return true }
        let url = Self.normalised(url)
        return prefixes.contains { prefix in
            guard !prefix.isEmpty, url.hasPrefix(prefix) else { return false }
            if prefix.hasSuffix("/") || url.utf8.count == prefix.utf8.count { return true }
            let next: UInt8 = url.utf8[url.utf8.index(url.utf8.startIndex, offsetBy: prefix.utf8.count)]
            return next == UInt8(ascii: "/") || next == UInt8(ascii: "?") || next == UInt8(ascii: "#")
        }
    }

    /// The scheme and authority lowercased (they name the same server in any case); the path kept.
    package static func normalised(_ url: String) -> String {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) else { return url }
        var end = colon + 3
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"), bytes[end] != UInt8(ascii: "#") { end += 1 }
        let authority = String(decoding: bytes[..<end], as: UTF8.self).lowercased()
        return authority + String(decoding: bytes[end...], as: UTF8.self)
    }
}
