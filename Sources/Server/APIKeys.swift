import TLS

/// The API keys a server accepts (`--api-keys FILE`, `PARLEY_API_KEYS`, `PARLEY_API_KEY`), held as
/// SHA-256 digests so the keys themselves are not kept in memory, and compared in constant time:
/// every digest is compared whole, so how long a refusal takes says nothing about any key.
public struct APIKeys: Sendable {
    private let digests: [[UInt8]]

    public init(_ keys: [String]) {
        digests = keys.map { OpenSSL.sha256(Array($0.utf8)) }
    }

    /// Keys from a file: one a line; blank lines and lines starting with `#` are skipped,
    /// whitespace around a key is not part of it.
    public static func parse(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).map { String(Substring($0).trimmingSpaces()) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    public func accepts(_ key: some StringProtocol) -> Bool {
        let digest = OpenSSL.sha256(Array(key.utf8))
        // Every digest is compared, whichever matches.
        var found = false
        for candidate in digests { found = OpenSSL.constantTimeEqual(candidate, digest) || found }
        return found
    }

    /// The subprotocol browsers offer a key in (they cannot set headers): `openai-insecure-api-key.<key>`.
    public static let protocolPrefix = "openai-insecure-api-key."

    /// The key a request presents: `Authorization: Bearer …`, the `api-key` header (Azure's
    /// clients), or the subprotocol; nil when it presents none.
    public static func presented(in request: HTTPRequest, offered: [String]) -> Substring? {
        if let authorization = request.header("authorization"), authorization.hasPrefix("Bearer ") {
            return Substring(authorization).dropFirst(7).trimmingSpaces()
        }
        if let header = request.header("api-key") { return Substring(header).trimmingSpaces() }
        return offered.first { $0.hasPrefix(protocolPrefix) }.map { Substring($0).dropFirst(protocolPrefix.count) }
    }
}
