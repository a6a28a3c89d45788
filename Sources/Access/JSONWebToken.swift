import JSON
import Loop
import Synchronization
import TLS

/// JSON Web Tokens (RFC 7519) as session credentials: an identity provider the operator runs signs
/// a token naming the tenant (`sub`), and Parley checks it with the key it was given, keeping
/// nothing per token.
///
/// What is accepted is decided by the keys configured, never by the token: HS256 only with the
/// shared secret, RS256 only with an RSA public key, ES256 only with a P-256 one. So `alg: none`
/// has no key, and a token that says HS256 is never checked with a public key's bytes as the HMAC
/// secret (the "algorithm confusion" attack of RFC 8725 section 2.1).
public struct JWTVerifier: Sendable {
    /// The HS256 secret, when one is configured (at least 32 bytes, RFC 7518 section 3.2).
    public var hmacSecret: [UInt8]? {
        didSet { hmacSecret.map { Secrets.register(String(decoding: $0, as: UTF8.self)) } }
    }
    /// RS256 and ES256 keys; each checks only the scheme it is.
    public var publicKeys: [PublicKey]
    /// When set, `aud` must be or contain it.
    public var audience: String?
    /// When set, `iss` must be it.
    public var issuer: String?
    /// Tokens whose signature has been checked, so that a token presented again (a service's token
    /// opening many sessions, a client reconnecting) skips the signature; nil: check every time.
    public var cache: JWTCache?

    /// Clock skew allowed on `exp` and `nbf` (RFC 7519 section 4.1.4: "a small leeway").
    public static let leewaySeconds = 60
    /// A token travels in a header or subprotocol of the upgrade; longer is not one of ours.
    public static let maxTokenBytes = 8 * 1024
    public static let minimumSecretBytes = 32

    public init(hmacSecret: [UInt8]? = nil, publicKeys: [PublicKey] = [], audience: String? = nil, issuer: String? = nil, cache: JWTCache? = nil) {
        self.hmacSecret = hmacSecret
        hmacSecret.map { Secrets.register(String(decoding: $0, as: UTF8.self)) }
        self.publicKeys = publicKeys
        self.audience = audience
        self.issuer = issuer
        self.cache = cache
    }

    /// Whether `credential` has a JWT's shape (three base64url parts, the first a JSON object),
    /// so that it is checked as one rather than as an API key.
    public static func looksLikeToken(_ credential: some StringProtocol) -> Bool {
        credential.hasPrefix("eyJ") && credential.utf8.count(where: { $0 == UInt8(ascii: ".") }) == 2
    }

    /// The token's claims if it is well formed, signed by a configured key with the algorithm that
    /// key is for, current at `now` (Unix seconds), for our audience and issuer, and names a tenant.
    public func verify(_ token: some StringProtocol, now: Int) -> Result<JWTClaims, JWTRefusal> {
        guard token.utf8.count <= Self.maxTokenBytes else { return .failure(.malformed("longer than \(Self.maxTokenBytes) bytes")) }
        // The claims are checked afresh every time (the clock moves); only the signature is remembered.
        guard let cache else { return signedClaims(token).flatMap { check($0, now: now) } }
        let digest = OpenSSL.sha256(Array(token.utf8))
        if let claims = cache.claims(digest) { return check(claims, now: now) }
        return signedClaims(token).flatMap { claims in
            let checked = check(claims, now: now)
            if case .success = checked { cache.insert(digest, claims) }
            return checked
        }
    }

    /// The claims of a token whose header and signature are good, not yet checked.
    private func signedClaims(_ token: some StringProtocol) -> Result<JSON, JWTRefusal> {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        // Five parts is an encrypted token (JWE), which Parley does not take.
        guard parts.count == 3 else { return .failure(.malformed("not three dot-separated parts")) }
        guard let header = Self.object(parts[0]) else { return .failure(.malformed("the header is not a base64url JSON object")) }
        guard let algorithm = header["alg"]?.string else { return .failure(.malformed("the header names no alg")) }
        // RFC 7515 section 4.1.11: an extension the recipient does not understand must be refused.
        guard header["crit"] == nil else { return .failure(.malformed("the header has crit extensions")) }
        guard let signature = Base64.decodeURL(parts[2]) else { return .failure(.malformed("the signature is not base64url")) }
        let signed = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        switch algorithm {
        case "HS256":
            guard let hmacSecret else { return .failure(.algorithmNotAllowed(algorithm)) }
            guard OpenSSL.constantTimeEqual(signature, OpenSSL.hmacSHA256(key: hmacSecret, signed)) else { return .failure(.badSignature) }
        case SignatureScheme.rs256.rawValue, SignatureScheme.es256.rawValue:
            let keys = publicKeys.filter { $0.scheme.rawValue == algorithm }
            guard !keys.isEmpty else { return .failure(.algorithmNotAllowed(algorithm)) }
            guard keys.contains(where: { $0.verify(signature, of: signed) }) else { return .failure(.badSignature) }
        default:
            return .failure(.algorithmNotAllowed(algorithm))
        }
        guard let claims = Self.object(parts[1]) else { return .failure(.malformed("the claims are not a base64url JSON object")) }
        return .success(claims)
    }

    private func check(_ claims: JSON, now: Int) -> Result<JWTClaims, JWTRefusal> {
        // A token that never expires is a key that cannot be revoked: `exp` is required.
        guard let expires = claims["exp"]?.double else { return .failure(.malformed("no exp claim")) }
        guard Double(now) < expires + Double(Self.leewaySeconds) else { return .failure(.expired) }
        if let notBefore = claims["nbf"] {
            guard let at = notBefore.double else { return .failure(.malformed("nbf is not a number")) }
            guard Double(now) >= at - Double(Self.leewaySeconds) else { return .failure(.notYetValid) }
        }
        if let audience {
            // RFC 7519 section 4.1.3: a string or an array of strings.
            let audiences = claims["aud"].map { $0.string.map { [$0] } ?? $0.array?.compactMap(\.string) ?? [] } ?? []
            guard audiences.contains(audience) else { return .failure(.wrongAudience) }
        }
        if let issuer, claims["iss"]?.string != issuer { return .failure(.wrongIssuer) }
        guard let subject = claims["sub"]?.string, !subject.isEmpty, subject.utf8.count <= Tenant.maxNameBytes else {
            return .failure(.malformed("sub must name the tenant in 1 to \(Tenant.maxNameBytes) bytes"))
        }
        switch TenantLimits.parse(claims: claims) {
        case .success(let limits): return .success(JWTClaims(tenant: subject, expiresAt: Int(expires), limits: limits))
        case .failure(let refusal): return .failure(refusal)
        }
    }

    /// A base64url part decoded to a JSON object with no name twice (RFC 7515 section 5.2 allows
    /// refusing those, and a duplicated `alg` or `exp` is how one parser is made to disagree with another).
    private static func object(_ part: some StringProtocol) -> JSON? {
        guard let bytes = Base64.decodeURL(part), let json = try? JSON(parsing: String(decoding: bytes, as: UTF8.self)),
              let members = json.object, Set(members.map(\.0)).count == members.count else { return nil }
        return json
    }
}

/// Tokens whose signatures verified, by SHA-256 of the token, with their claims. An ES256
/// verification costs about 60 µs (`openssl speed ecdsap256`: 16,800 a second on this machine),
/// more than the rest of an upgrade; a token seen again costs a digest and a lookup. At most
/// `capacity` tokens; when full it starts afresh, which costs one verification per token again.
public final class JWTCache: Sendable {
    public static let defaultCapacity = 10_000
    private let capacity: Int
    private let entries = Mutex<[[UInt8]: JSON]>([:])

    public init(capacity: Int = JWTCache.defaultCapacity) { self.capacity = capacity }

    func claims(_ digest: [UInt8]) -> JSON? { entries.withLock { $0[digest] } }

    func insert(_ digest: [UInt8], _ claims: JSON) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[digest] = claims
        }
    }
}

/// What a verified token says: the tenant and its limits.
public struct JWTClaims: Sendable, Equatable {
    public let tenant: String
    public let expiresAt: Int
    public let limits: TenantLimits
}

/// Why a token was refused; the message goes into the 401's body, so it names the rule broken and
/// never echoes the token.
public enum JWTRefusal: Error, Equatable, Sendable {
    case malformed(String)
    case algorithmNotAllowed(String)
    case badSignature, expired, notYetValid, wrongAudience, wrongIssuer
    case invalidClaim(String)

    public var message: String {
        switch self {
        case .malformed(let why): "the token is malformed: \(why)"
        case .algorithmNotAllowed(let alg): "the token's algorithm \(alg.prefix(16)) is not accepted by this server"
        case .badSignature: "the token's signature does not verify"
        case .expired: "the token has expired"
        case .notYetValid: "the token is not valid yet (nbf)"
        case .wrongAudience: "the token is for another audience"
        case .wrongIssuer: "the token is from another issuer"
        case .invalidClaim(let why): "the token has an invalid claim: \(why)"
        }
    }
}

/// Makes tokens: `parley token`, the load client and the tests. The server itself only verifies.
public enum JWTSigner {
    public enum Key {
        case hmac([UInt8])
        case key(PrivateKey)
    }

    public static func sign(_ claims: JSON, with key: Key) throws(TLSError) -> String {
        let algorithm = switch key {
        case .hmac: "HS256"
        case .key(let key): key.scheme.rawValue
        }
        let header = JSON.object([("alg", .string(algorithm)), ("typ", .string("JWT"))])
        let signed = Base64.encodeURL(Array(header.description.utf8)) + "." + Base64.encodeURL(Array(claims.description.utf8))
        let signature = switch key {
        case .hmac(let secret): OpenSSL.hmacSHA256(key: secret, Array(signed.utf8))
        case .key(let key): try key.sign(Array(signed.utf8))
        }
        return signed + "." + Base64.encodeURL(signature)
    }
}
