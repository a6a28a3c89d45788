import Loop
import Server
import TLS

/// The API keys a server accepts (`--api-keys FILE`, `PARLEY_API_KEYS`, `PARLEY_API_KEY`), held as
/// SHA-256 digests so the keys themselves are not kept in memory, and compared in constant time:
/// every digest is compared whole, so how long a refusal takes says nothing about any key.
///
/// Each key belongs to a tenant, whose limits its sessions count against: the name before the key
/// on its line of the file (`acme sk-…`), or else `key-` and the first eight hex digits of its
/// digest (which names the key in metrics without revealing it).
public struct APIKeys: Sendable {
    public struct Entry: Sendable, Equatable {
        public let key: String
        public let tenant: String?

        public init(key: String, tenant: String? = nil) {
            self.key = key
            self.tenant = tenant
        }
    }

    private let digests: [[UInt8]]
    private let tenants: [String]

    public init(_ keys: [String]) { self.init(entries: keys.map { Entry(key: $0) }) }

    public init(entries: [Entry]) {
        for entry in entries { Secrets.register(entry.key) }
        digests = entries.map { OpenSSL.sha256(Array($0.key.utf8)) }
        tenants = zip(entries, digests).map { entry, digest in
            entry.tenant ?? "key-" + OpenSSL.hex(digest.prefix(4))
        }
    }

    /// Keys from a file: one a line, either the key alone or a tenant name, whitespace, and the
    /// key; blank lines and lines starting with `#` are skipped.
    public static func parse(_ text: String) -> [Entry] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let last = words.last, !words[0].hasPrefix("#") else { return nil }
            return Entry(key: String(last), tenant: words.count > 1 ? String(words[0]) : nil)
        }
    }

    /// The tenant of `key`, or nil when it is not one of the keys.
    public func tenant(of key: some StringProtocol) -> String? {
        let digest = OpenSSL.sha256(Array(key.utf8))
        // Every digest is compared, whichever matches.
        var found: Int?
        for (i, candidate) in digests.enumerated() where OpenSSL.constantTimeEqual(candidate, digest) && found == nil { found = i }
        return found.map { tenants[$0] }
    }

    public func accepts(_ key: some StringProtocol) -> Bool { tenant(of: key) != nil }

    /// The subprotocol browsers offer a key in (they cannot set headers): `openai-insecure-api-key.<key>`.
    public static let protocolPrefix = "openai-insecure-api-key."

    /// The credential a request presents: `Authorization: Bearer …`, the `api-key` header (Azure's
    /// clients), or the subprotocol; nil when it presents none.
    public static func presented(in request: HTTPRequest, offered: [String]) -> Substring? {
        if let authorization = request.header("authorization"), authorization.hasPrefix("Bearer ") {
            return Substring(authorization).dropFirst(7).trimmingSpaces()
        }
        if let header = request.header("api-key") { return Substring(header).trimmingSpaces() }
        return offered.first { $0.hasPrefix(protocolPrefix) }.map { Substring($0).dropFirst(protocolPrefix.count) }
    }
}
