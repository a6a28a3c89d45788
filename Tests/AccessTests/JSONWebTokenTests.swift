import JSON
import Loop
@testable import Access
import TLS
import Testing

/// JWTs as credentials: each algorithm through OpenSSL, every claim rule, and the attacks of
/// RFC 8725 (alg none, HS/RS confusion, forged and replayed-after-expiry tokens).
@Suite struct JSONWebTokenTests {
    static let ec = try! PrivateKey(generating: .es256)
    static let rsa = try! PrivateKey(generating: .rs256)
    static let secret = Array("a shared secret of thirty-two bytes or more".utf8)
    static let now = 1_800_000_000

    static var verifier: JWTVerifier {
        JWTVerifier(hmacSecret: secret, publicKeys: [try! PublicKey(pem: Array(ec.publicPEM.utf8)), try! PublicKey(pem: Array(rsa.publicPEM.utf8))])
    }

    func claims(_ extra: [(String, JSON)] = [], exp: Int = now + 600) -> JSON {
        .object([("sub", .string("acme")), ("exp", .int(exp))] + extra)
    }

    /// A token with any header and claims, signed (or not) as given: for tokens no honest signer makes.
    func token(header: JSON, claims: JSON, sign: ([UInt8]) -> [UInt8]) -> String {
        let signed = Base64.encodeURL(Array(header.description.utf8)) + "." + Base64.encodeURL(Array(claims.description.utf8))
        return signed + "." + Base64.encodeURL(sign(Array(signed.utf8)))
    }

    @Test(arguments: ["HS256", "RS256", "ES256"])
    func eachAlgorithmVerifiesAndNamesTheTenant(algorithm: String) throws {
        let key: JWTSigner.Key = switch algorithm {
        case "HS256": .hmac(Self.secret)
        case "RS256": .key(Self.rsa)
        default: .key(Self.ec)
        }
        let token = try JWTSigner.sign(claims([("parley_max_sessions", .int(3))]), with: key)
        #expect(JWTVerifier.looksLikeToken(token))
        let verified = try Self.verifier.verify(token, now: Self.now).get()
        #expect(verified.tenant == "acme" && verified.limits.maxSessions == 3)
    }

    @Test func es256SignaturesRoundTripThroughDERWhateverTheirLeadingBytes() throws {
        // r or s with a leading zero byte, or a top bit set, changes the DER length: 200 signatures
        // meet both cases many times over.
        let key = try PublicKey(pem: Array(Self.ec.publicPEM.utf8))
        for i in 0..<200 {
            let message = Array("message \(i)".utf8)
            let signature = try Self.ec.sign(message)
            #expect(signature.count == 64)
            #expect(key.verify(signature, of: message))
            #expect(!key.verify(signature, of: message + [0]))
        }
    }

    @Test func expiredAndNotYetValidTokensAreRefusedWithinTheLeeway() throws {
        let leeway = JWTVerifier.leewaySeconds
        let stale = try JWTSigner.sign(claims(exp: Self.now - leeway - 1), with: .key(Self.ec))
        #expect(Self.verifier.verify(stale, now: Self.now) == .failure(.expired))
        let skewed = try JWTSigner.sign(claims(exp: Self.now - leeway + 5), with: .key(Self.ec))
        #expect((try? Self.verifier.verify(skewed, now: Self.now).get()) != nil, "a clock a little behind is allowed")
        let early = try JWTSigner.sign(claims([("nbf", .int(Self.now + leeway + 10))]), with: .key(Self.ec))
        #expect(Self.verifier.verify(early, now: Self.now) == .failure(.notYetValid))
        let noExpiry = try JWTSigner.sign(.object([("sub", .string("acme"))]), with: .hmac(Self.secret))
        #expect(Self.verifier.verify(noExpiry, now: Self.now) == .failure(.malformed("no exp claim")))
    }

    @Test func audienceAndIssuerMustMatchWhenConfigured() throws {
        var verifier = Self.verifier
        verifier.audience = "parley"
        verifier.issuer = "https://id.example.com"
        let iss: (String, JSON) = ("iss", .string("https://id.example.com"))
        let good = try JWTSigner.sign(claims([("aud", .array([.string("other"), .string("parley")])), iss]), with: .key(Self.ec))
        #expect((try? verifier.verify(good, now: Self.now).get())?.tenant == "acme")
        let single = try JWTSigner.sign(claims([("aud", .string("parley")), iss]), with: .key(Self.ec))
        #expect((try? verifier.verify(single, now: Self.now).get()) != nil)
        let wrong = try JWTSigner.sign(claims([("aud", .string("billing")), iss]), with: .key(Self.ec))
        #expect(verifier.verify(wrong, now: Self.now) == .failure(.wrongAudience))
        let none = try JWTSigner.sign(claims([iss]), with: .key(Self.ec))
        #expect(verifier.verify(none, now: Self.now) == .failure(.wrongAudience))
        let foreign = try JWTSigner.sign(claims([("aud", .string("parley")), ("iss", .string("https://evil.example"))]), with: .key(Self.ec))
        #expect(verifier.verify(foreign, now: Self.now) == .failure(.wrongIssuer))
    }

    @Test func algNoneIsRefused() {
        for alg in ["none", "None", "NONE"] {
            let unsigned = token(header: .object([("alg", .string(alg))]), claims: claims()) { _ in [] }
            #expect(Self.verifier.verify(unsigned, now: Self.now) == .failure(.algorithmNotAllowed(alg)))
            // The same with the empty signature part dropped entirely.
            #expect((try? Self.verifier.verify(unsigned.dropLast(), now: Self.now).get()) == nil)
        }
    }

    @Test func hs256SignedWithThePublicKeyIsRefused() {
        // The classic confusion: the attacker knows the RSA public key and signs HS256 with its
        // PEM as the HMAC secret, hoping the server feeds the public key to HMAC.
        let publicPEM = Array(Self.rsa.publicPEM.utf8)
        let forged = token(header: .object([("alg", .string("HS256")), ("typ", .string("JWT"))]), claims: claims()) {
            OpenSSL.hmacSHA256(key: publicPEM, $0)
        }
        let rsaOnly = JWTVerifier(publicKeys: [try! PublicKey(pem: publicPEM)])
        #expect(rsaOnly.verify(forged, now: Self.now) == .failure(.algorithmNotAllowed("HS256")))
        // With an HS256 secret configured too, the public key is still never the HMAC key.
        #expect(Self.verifier.verify(forged, now: Self.now) == .failure(.badSignature))
    }

    @Test func aTokenCannotBorrowAnotherKeysAlgorithm() throws {
        // An RS256 signature relabelled ES256 (and the reverse) fails: each key checks its own scheme.
        let rs = try JWTSigner.sign(claims(), with: .key(Self.rsa))
        let parts = rs.split(separator: ".")
        let relabelled = token(header: .object([("alg", .string("ES256"))]), claims: claims()) { _ in Base64.decodeURL(parts[2])! }
        #expect(Self.verifier.verify(relabelled, now: Self.now) == .failure(.badSignature))
        let esOnly = JWTVerifier(publicKeys: [try PublicKey(pem: Array(Self.ec.publicPEM.utf8))])
        #expect(esOnly.verify(rs, now: Self.now) == .failure(.algorithmNotAllowed("RS256")))
        #expect(JWTVerifier(hmacSecret: Self.secret).verify(try JWTSigner.sign(claims(), with: .key(Self.ec)), now: Self.now)
                == .failure(.algorithmNotAllowed("ES256")))
    }

    @Test func forgedTokensAreRefused() throws {
        let real = try JWTSigner.sign(claims(), with: .key(Self.ec))
        let parts = real.split(separator: ".").map(String.init)
        // The claims swapped for another tenant's, the signature kept.
        let otherClaims = Base64.encodeURL(Array(JSON.object([("sub", .string("evil")), ("exp", .int(Self.now + 600))]).description.utf8))
        #expect(Self.verifier.verify(parts[0] + "." + otherClaims + "." + parts[2], now: Self.now) == .failure(.badSignature))
        // Signed by a key the server does not have.
        let stranger = try JWTSigner.sign(claims(), with: .key(try PrivateKey(generating: .es256)))
        #expect(Self.verifier.verify(stranger, now: Self.now) == .failure(.badSignature))
        #expect(Self.verifier.verify(try JWTSigner.sign(claims(), with: .hmac(Array("another secret, also thirty-two bytes".utf8))), now: Self.now)
                == .failure(.badSignature))
    }

    @Test func malformedTokensAreRefusedWithAReason() {
        let header = Base64.encodeURL(Array(#"{"alg":"HS256"}"#.utf8))
        let body = Base64.encodeURL(Array(claims().description.utf8))
        let cases: [String] = [
            "", "eyJ", "a.b", "a.b.c.d.e", header + "." + body, header + "." + body + ".!!!",
            Base64.encodeURL(Array("[1]".utf8)) + "." + body + ".AA",
            Base64.encodeURL(Array(#"{"alg":"HS256","alg":"none"}"#.utf8)) + "." + body + ".AA",
            Base64.encodeURL(Array(#"{"alg":"HS256","crit":["exp"]}"#.utf8)) + "." + body + ".AA",
            String(repeating: "e", count: JWTVerifier.maxTokenBytes + 1),
        ]
        for text in cases {
            guard case .failure(let refusal) = Self.verifier.verify(text, now: Self.now) else {
                Issue.record("accepted \(text.prefix(40))")
                continue
            }
            #expect(!refusal.message.isEmpty && !refusal.message.contains(body))
        }
    }

    @Test func claimsMustNameATenantAndCarryValidLimits() throws {
        let noSubject = try JWTSigner.sign(.object([("exp", .int(Self.now + 60))]), with: .hmac(Self.secret))
        #expect((try? Self.verifier.verify(noSubject, now: Self.now).get()) == nil)
        let negative = try JWTSigner.sign(claims([("parley_sessions_per_minute", .int(-1))]), with: .hmac(Self.secret))
        #expect(Self.verifier.verify(negative, now: Self.now) == .failure(.invalidClaim("parley_sessions_per_minute must be a positive number")))
        let all = try JWTSigner.sign(claims(TenantLimits(maxSessions: 2, sessionsPerMinute: 30, maxSessionSeconds: 600, maxSessionTokens: 5000).claims),
                                     with: .hmac(Self.secret))
        #expect(try Self.verifier.verify(all, now: Self.now).get().limits == TenantLimits(maxSessions: 2, sessionsPerMinute: 30, maxSessionSeconds: 600, maxSessionTokens: 5000))
    }

    @Test func aRememberedSignatureStillHasItsClaimsChecked() throws {
        var verifier = Self.verifier
        let cache = JWTCache(capacity: 2)
        verifier.cache = cache
        let token = try JWTSigner.sign(claims(exp: Self.now + 100), with: .key(Self.ec))
        #expect((try? verifier.verify(token, now: Self.now).get())?.tenant == "acme")
        #expect(cache.claims(OpenSSL.sha256(Array(token.utf8))) != nil)
        #expect((try? verifier.verify(token, now: Self.now).get())?.tenant == "acme", "from the cache")
        #expect(verifier.verify(token, now: Self.now + 100 + JWTVerifier.leewaySeconds) == .failure(.expired), "a cached token still expires")
        // A refused token is not remembered; a full cache starts afresh.
        let forged = String(token.dropLast(4)) + "AAAA"
        #expect(verifier.verify(forged, now: Self.now) == .failure(.badSignature))
        #expect(cache.claims(OpenSSL.sha256(Array(forged.utf8))) == nil)
        for tenant in ["b", "c"] {
            _ = verifier.verify(try JWTSigner.sign(.object([("sub", .string(tenant)), ("exp", .int(Self.now + 60))]), with: .hmac(Self.secret)), now: Self.now)
        }
        #expect(cache.claims(OpenSSL.sha256(Array(token.utf8))) == nil)
    }

    @Test func keysOfTheWrongKindAreRefusedAtStartup() {
        #expect(throws: TLSError.self) { try PublicKey(pem: Array("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n".utf8)) }
        #expect(throws: TLSError.self) { try PublicKey(pem: Array(Self.ec.privatePEM.utf8.prefix(40))) }
    }
}
