import JSON
import Loop
import Synchronization
import TLS

/// Ephemeral client secrets (`ek_…`), so that a browser never holds a real API key: a server with
/// a key mints one (`POST /v1/realtime/client_secrets`), the browser opens its session with it.
///
/// A secret is signed, not stored: `ek_` + base64url(payload) + `.` + base64url(HMAC-SHA-256 of
/// what precedes it), the payload saying when it stops being good for connecting, how long a
/// session it opens may last, and the session settings it pins. Any node with the same signing
/// key accepts it, and a node keeps nothing per secret.
public struct ClientSecretSigner: Sendable {
    private let source: KeySource

    private var key: [UInt8] {
        switch source {
        case .given(let key): key
        case .random(let key): key.value
        }
    }

    public init(key: [UInt8]) {
        Secrets.register(String(decoding: key, as: UTF8.self))
        source = .given(key)
    }

    /// A key of this signer alone, drawn when it first signs or checks a secret: its secrets open
    /// sessions here only. Drawn at start, it was the one call that initialised OpenSSL in every
    /// server (3.4 MB of libcrypto's pages resident, docs/benchmarks.md), though most never mint
    /// a secret.
    public static func random() -> ClientSecretSigner { ClientSecretSigner(source: .random(RandomKey())) }

    private init(source: KeySource) { self.source = source }

    private enum KeySource: Sendable {
        case given([UInt8])
        case random(RandomKey)
    }

    /// 32 random bytes, drawn once, on first use.
    private final class RandomKey: Sendable {
        private let drawn = Mutex<[UInt8]?>(nil)

        var value: [UInt8] {
            drawn.withLock { drawn in
                if let drawn { return drawn }
                let key = OpenSSL.randomBytes(32)
                drawn = key
                return key
            }
        }
    }

    /// The largest secret: it travels in a header (or a subprotocol) of the upgrade request.
    public static let maxSecretBytes = 8 * 1024

    public func issue(_ secret: ClientSecret) -> String? {
        var members: [(String, JSON)] = [("exp", .int(secret.expiresAt)), ("max", .int(secret.sessionSeconds)), ("session", secret.session)]
        if let tenant = secret.tenant { members += [("ten", .string(tenant)), ("lim", .object(secret.limits.claims))] }
        let payload: JSON = .object(members)
        let body = "ek_" + Base64.encodeURL(Array(payload.description.utf8))
        let token = body + "." + Base64.encodeURL(OpenSSL.hmacSHA256(key: key, Array(body.utf8)))
        return token.utf8.count <= Self.maxSecretBytes ? token : nil
    }

    /// The secret `token` carries, if its signature is this signer's and it is still good for
    /// connecting at `now` (Unix seconds); nil otherwise.
    public func verify(_ token: some StringProtocol, now: Int) -> ClientSecret? {
        guard token.hasPrefix("ek_"), token.utf8.count <= Self.maxSecretBytes, let dot = token.lastIndex(of: ".") else { return nil }
        let body = String(token[..<dot])
        guard let mac = Base64.decodeURL(token[token.index(after: dot)...]) else { return nil }
        guard OpenSSL.constantTimeEqual(mac, OpenSSL.hmacSHA256(key: key, Array(body.utf8))), let bytes = Base64.decodeURL(body.dropFirst(3)),
              let payload = try? JSON(parsing: String(decoding: bytes, as: UTF8.self)),
              let expiresAt = payload["exp"]?.int, let seconds = payload["max"]?.int, let session = payload["session"],
              now < expiresAt else { return nil }
        var limits = TenantLimits()
        if let claims = payload["lim"], case .success(let carried) = TenantLimits.parse(claims: claims) { limits = carried }
        return ClientSecret(expiresAt: expiresAt, sessionSeconds: seconds, session: session, tenant: payload["ten"]?.string, limits: limits)
    }
}

/// What a client secret says: until when it opens sessions, how long they may last, the session
/// settings it pins (as the client-secret request gave them), and the tenant that minted it with
/// that tenant's limits, so its sessions count against them.
public struct ClientSecret: Sendable, Equatable {
    public let expiresAt: Int
    public let sessionSeconds: Int
    public let session: JSON
    public let tenant: String?
    public let limits: TenantLimits

    public init(expiresAt: Int, sessionSeconds: Int, session: JSON, tenant: String? = nil, limits: TenantLimits = TenantLimits()) {
        self.expiresAt = expiresAt
        self.sessionSeconds = sessionSeconds
        self.session = session
        self.tenant = tenant
        self.limits = limits
    }
}
