import Upstream

/// Where an MCP server is and what to send it besides MCP: a session's tool entry's `server_url`,
/// `authorization` and `headers`. Checked once, here: header names are HTTP tokens and values
/// hold no line break (a value with CRLF would write headers of its own choosing), and the headers
/// the transport itself writes cannot be overridden.
///
/// Its description names the server by host and port only: the secrets stay out of it, and so
/// does the URL's path, which may carry a key.
public struct MCPEndpoint: Sendable, CustomStringConvertible {
    public let url: UpstreamURL
    /// The `Authorization` header's value (`Bearer …`), when the entry gave a token.
    let authorization: String?
    /// Extra headers, as given.
    let headers: [(String, String)]

    public enum Invalid: Error, Equatable, CustomStringConvertible {
        case url
        case headerName(String)
        case headerValue(name: String)
        case reservedHeader(String)
        case authorization

        public var description: String {
            switch self {
            case .url: "the MCP server_url is not an http:// or https:// URL"
            case .headerName(let name): "the MCP header name \"\(name)\" is not an HTTP token"
            case .headerValue(let name): "the value of the MCP header \(name) has a line break or is too long"
            case .reservedHeader(let name): "the MCP header \(name) is the transport's own and cannot be set"
            case .authorization: "the MCP authorization has a line break or is too long"
            }
        }
    }

    /// Headers the transport writes itself (transports: Accept, the session and version headers;
    /// HTTP framing). An entry's `Authorization` header is allowed unless it also gave `authorization`.
    static let reserved: Set<String> = ["host", "content-type", "content-length", "transfer-encoding", "connection", "accept",
                                        "mcp-session-id", "mcp-protocol-version", "last-event-id", "upgrade", "te", "trailer"]
    static let maxValueBytes = 8192

    /// `authorization`: a bearer token, with or without its `Bearer ` prefix.
    public init(url: String, authorization: String? = nil, headers: [(String, String)] = []) throws(Invalid) {
        guard let parsed = UpstreamURL(url) else { throw .url }
        self.url = parsed
        var checked: [(String, String)] = []
        for (name, value) in headers {
            guard !name.isEmpty, name.utf8.count <= 256, name.utf8.allSatisfy(Self.isTokenByte) else {
                // Named in the error with what is not printable ASCII made `?`: the name is not a
                // secret, but it is untrusted text bound for a log.
                throw .headerName(String(name.unicodeScalars.prefix(64).map { (0x20..<0x7F).contains($0.value) ? Character($0) : "?" }))
            }
            let lower = name.lowercased()
            guard !Self.reserved.contains(lower), !(lower == "authorization" && authorization != nil) else { throw .reservedHeader(name) }
            guard Self.isFieldValue(value) else { throw .headerValue(name: name) }
            checked.append((name, value))
        }
        self.headers = checked
        if let token = authorization {
            guard Self.isFieldValue(token), !token.isEmpty else { throw .authorization }
            self.authorization = token.lowercased().hasPrefix("bearer ") ? token : "Bearer \(token)"
        } else {
            self.authorization = nil
        }
    }

    /// The values to keep out of every message: the token and every header value.
    var secrets: [String] {
        var values = headers.map(\.1)
        if let authorization {
            values.append(authorization)
            values.append(String(authorization.dropFirst("Bearer ".count)))
        }
        return values
    }

    public var description: String { "\(url.isTLS ? "https" : "http")://\(url.host):\(url.port)" }

    /// RFC 9110 section 5.6.2: tchar.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// RFC 9110 section 5.5: no CR, LF or NUL in a field value.
    private static func isFieldValue(_ value: String) -> Bool {
        value.utf8.count <= maxValueBytes && !value.utf8.contains { $0 == 13 || $0 == 10 || $0 == 0 }
    }
}
