/// A parsed HTTP/1.1 request: its head, and its body once read (bodies are framed by
/// Content-Length only, and bounded).
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The request target as sent: path and query.
    public var target: String
    /// Minor version: 1 for HTTP/1.1, 0 for HTTP/1.0.
    public var minorVersion: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8] = []

    public init(method: String, target: String, minorVersion: Int, headers: [(name: String, value: String)], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.minorVersion = minorVersion
        self.headers = headers
        self.body = body
    }

    public static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.method == b.method && a.target == b.target && a.minorVersion == b.minorVersion && a.body == b.body
            && a.headers.elementsEqual(b.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The body's length from Content-Length (the parser has validated it); 0 without one.
    public var contentLength: Int { header("content-length").flatMap { Int($0) } ?? 0 }

    /// The target without its query string.
    public var path: Substring { target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0] }

    /// The query string's value for `key`, if present (no percent-decoding).
    public func queryValue(_ key: String) -> Substring? {
        guard let q = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: q)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts[0] == key { return parts.count > 1 ? parts[1] : "" }
        }
        return nil
    }

    /// The first value of a header, by case-insensitive name.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// All comma-separated tokens of every occurrence of a header, lowercased and trimmed.
    public func tokens(_ name: String) -> [Substring] {
        let lower = name.lowercased()
        return headers.filter { $0.name.lowercased() == lower }.flatMap { header in
            header.value.lowercased().split(separator: ",").map { $0.trimmingSpaces() }
        }
    }

    /// HTTP/1.1 keeps the connection by default, HTTP/1.0 closes it, `Connection` overrides both.
    public var keepAlive: Bool {
        let connection = tokens("connection")
        if connection.contains("close") { return false }
        return minorVersion >= 1 || connection.contains("keep-alive")
    }
}
