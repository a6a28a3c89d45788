import Access
import JSON
import Loop
import TLS

/// JSON Web Tokens as an upgrade presents them, through the verifier a server with an HS256 secret
/// and an ES256 key has. Each input is verified as it is (the framing, the header, the algorithm
/// rules, and for ES256 the signature's conversion to DER and OpenSSL's check), and then signed
/// right with the HS256 secret under its own header and claims, which is the only way a fuzzer
/// reaches the claim checks (a real client cannot, without the secret).
///
/// Checks that a token that verifies names a tenant of 1 to 128 bytes, has not expired at `now`
/// (with the leeway), and was signed with an algorithm the server has a key for.
enum JWTFuzz {
    static let secret = Array("parley fuzz JWT secret, 32 bytes".utf8)
    /// A fixed P-256 key (made for the fuzzer, guarding nothing), so ES256 seeds signed with it verify as they are.
    static let ecKey = try! PrivateKey(pem: Array(pem.utf8))
    static let verifier = JWTVerifier(hmacSecret: secret, publicKeys: [try! PublicKey(pem: Array(ecKey.publicPEM.utf8))])
    /// 2025-06-15; the seeds expire in 2033.
    static let now = 1_750_000_000

    static func run(_ input: UnsafeRawBufferPointer) {
        let token = String(decoding: input, as: UTF8.self)
        check(verifier.verify(token, now: now), token)
        // The same header and claims, signed right with the shared secret.
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return }
        let body = parts[0] + "." + parts[1]
        check(verifier.verify(body + "." + Base64.encodeURL(OpenSSL.hmacSHA256(key: secret, Array(body.utf8))), now: now), token)
    }

    private static func check(_ result: Result<JWTClaims, JWTRefusal>, _ token: String) {
        guard case .success(let claims) = result else { return }
        precondition(!claims.tenant.isEmpty && claims.tenant.utf8.count <= Tenant.maxNameBytes, "tenant \(claims.tenant.utf8.count) bytes")
        precondition(claims.expiresAt + JWTVerifier.leewaySeconds >= now - 1, "a token that expired at \(claims.expiresAt) verified")
        let header = token.split(separator: ".").first.flatMap { Base64.decodeURL($0) }.flatMap { try? JSON(parsing: String(decoding: $0, as: UTF8.self)) }
        let alg = header?["alg"]?.string
        precondition(alg == "HS256" || alg == "ES256", "a token with alg \(String(describing: alg)) verified")
    }

    static let pem = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgeW4GKBNA3ZZapHEV
        JKTDyp2P7gn+amPGhLvj4S8pcpahRANCAAR2O0YYdf/K8w6sXJJF8U0HP+kE5Oph
        54WK9IUFPwm0pzxImMTP3w/Yzl2RbwLRNpQuwpOj3inLMmQ1PeACUl4b
        -----END PRIVATE KEY-----
        """
}
