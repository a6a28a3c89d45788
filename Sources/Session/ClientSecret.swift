import JSON
import Loop
import TLS

/// Ephemeral client secrets (`ek_…`), so that a browser never holds a real API key: a server with
/// a key mints one (`POST /v1/realtime/client_secrets`), the browser opens its session with it.
///
/// A secret is signed, not stored: `ek_` + base64url(payload) + `.` + base64url(HMAC-SHA-256 of
/// what precedes it), the payload saying when it stops being good for connecting, how long a
/// session it opens may last, and the session settings it pins. Any node with the same signing
/// key accepts it, and a node keeps nothing per secret.
public struct ClientSecretSigner: Sendable {
    private let key: [UInt8]

    public init(key: [UInt8]) { self.key = key }

    /// A key of this process alone: its secrets open sessions here only.
    public static func random() -> ClientSecretSigner { ClientSecretSigner(key: OpenSSL.randomBytes(32)) }

    /// The largest secret: it travels in a header (or a subprotocol) of the upgrade request.
    public static let maxSecretBytes = 8 * 1024

    public func issue(_ secret: ClientSecret) -> String? {
        let payload: JSON = .object([("exp", .int(secret.expiresAt)), ("max", .int(secret.sessionSeconds)), ("session", secret.session)])
        let body = "ek_" + Self.base64url(Array(payload.description.utf8))
        let token = body + "." + Self.base64url(OpenSSL.hmacSHA256(key: key, Array(body.utf8)))
        return token.utf8.count <= Self.maxSecretBytes ? token : nil
    }

    /// The secret `token` carries, if its signature is this signer's and it is still good for
    /// connecting at `now` (Unix seconds); nil otherwise.
    public func verify(_ token: some StringProtocol, now: Int) -> ClientSecret? {
        guard token.hasPrefix("ek_"), token.utf8.count <= Self.maxSecretBytes, let dot = token.lastIndex(of: ".") else { return nil }
        let body = String(token[..<dot])
        guard let mac = Self.unbase64url(token[token.index(after: dot)...]) else { return nil }
        guard OpenSSL.constantTimeEqual(mac, OpenSSL.hmacSHA256(key: key, Array(body.utf8))), let bytes = Self.unbase64url(body.dropFirst(3)),
              let payload = try? JSON(parsing: String(decoding: bytes, as: UTF8.self)),
              let expiresAt = payload["exp"]?.int, let seconds = payload["max"]?.int, let session = payload["session"],
              now < expiresAt else { return nil }
        return ClientSecret(expiresAt: expiresAt, sessionSeconds: seconds, session: session)
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        String(Base64.encode(bytes).compactMap { c -> Character? in c == "+" ? "-" : c == "/" ? "_" : c == "=" ? nil : c })
    }

    static func unbase64url(_ text: some StringProtocol) -> [UInt8]? {
        var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Base64.decode(Array(standard.utf8))
    }
}

/// What a client secret says: until when it opens sessions, how long they may last, and the
/// session settings it pins (as the client-secret request gave them).
public struct ClientSecret: Sendable, Equatable {
    public let expiresAt: Int
    public let sessionSeconds: Int
    public let session: JSON

    public init(expiresAt: Int, sessionSeconds: Int, session: JSON) {
        self.expiresAt = expiresAt
        self.sessionSeconds = sessionSeconds
        self.session = session
    }
}
