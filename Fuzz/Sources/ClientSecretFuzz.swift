import JSON
import Access
import Loop
import TLS

/// Client secrets (`ek_…`) as an upgrade presents them: header text, verified with the server's
/// signing key. Each input is verified as it is, which tries the framing and the signature, and
/// then with its signature made right, which is the only way a fuzzer gets to the payload's
/// base64, JSON and fields; a real client cannot do that without the key.
///
/// Checks that a secret that verifies is still good at `now`, and that the signer's own secret for
/// it verifies to the same expiry, session length, session and tenant. (Not always to the same
/// limits: a session length travels in minutes, and seconds / 60 * 60 may differ in the last bit.)
enum ClientSecretFuzz {
    /// Fixed, so seeds minted with it (Fuzz/make-seeds.py) verify as they are.
    static let key = Array("parley fuzz signing key, 32 byte".utf8)
    static let signer = ClientSecretSigner(key: key)
    /// 2025-06-15; the seeds expire in 2033.
    static let now = 1_750_000_000

    static func run(_ input: UnsafeRawBufferPointer) {
        let token = String(decoding: input, as: UTF8.self)
        check(signer.verify(token, now: now))
        let body = token.lastIndex(of: ".").map { String(token[..<$0]) } ?? token
        let signed = body + "." + Base64.encodeURL(OpenSSL.hmacSHA256(key: key, Array(body.utf8)))
        check(signer.verify(signed, now: now))
    }

    private static func check(_ secret: ClientSecret?) {
        guard let secret else { return }
        precondition(secret.expiresAt > now, "a secret that expired at \(secret.expiresAt) verified")
        guard let reissued = signer.issue(secret) else { return }
        let again = signer.verify(reissued, now: now)
        precondition(again?.expiresAt == secret.expiresAt && again?.sessionSeconds == secret.sessionSeconds
                     && again?.session == secret.session && again?.tenant == secret.tenant,
                     "\(secret) does not survive being issued again: \(String(describing: again))")
    }
}
