internal import COpenSSL
internal import CTLS

/// The OpenSSL calls Parley makes outside a TLS session (digests: the WebSocket handshake's, API
/// keys'), wrapped once.
public enum OpenSSL {
    /// Opens OpenSSL (libssl.so.3 and its libcrypto), if it is not yet: it is opened when first
    /// used, not linked, so a server that never speaks TLS nor signs anything does not carry it
    /// (docs/benchmarks.md, "Start-up memory"). The TLS contexts and keys call this first, so a
    /// missing library is their error; the calls below open it themselves, and stop the process
    /// with the reason if it cannot be had (libssl3 is a package dependency, so only a broken
    /// install gets there).
    public static func load() throws(TLSError) {
        var error = [CChar](repeating: 0, count: 256)
        guard parley_openssl_load(&error, error.count) == 0 else {
            throw TLSError("OpenSSL cannot be loaded: \(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        }
    }

    /// SHA-1 digest, used only for the WebSocket accept key (RFC 6455 section 4.2.2).
    public static func sha1(_ bytes: [UInt8]) -> [UInt8] { digest(bytes, EVP_sha1(), "SHA-1") }

    /// MD5 digest: only for SIP's digest authentication, whose callers still answer with it by
    /// default (RFC 8760 section 2.2 keeps it for backward compatibility).
    public static func md5(_ bytes: [UInt8]) -> [UInt8] { digest(bytes, EVP_md5(), "MD5") }

    /// SHA-256 digest: what API keys are held as, so the keys themselves are not in memory.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] { digest(bytes, EVP_sha256(), "SHA-256") }

    /// Lower-case hex, as digests are written in logs, files and keys.
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// HMAC-SHA-256 of `bytes` under `key`: what client secrets and HS256 tokens are signed with.
    public static func hmacSHA256(key: [UInt8], _ bytes: [UInt8]) -> [UInt8] { hmac(EVP_sha256(), key: key, bytes, "SHA-256") }

    /// HMAC-SHA-1 of `bytes` under `key`: only for checking Twilio's request signatures, which are
    /// defined with it (X-Twilio-Signature).
    public static func hmacSHA1(key: [UInt8], _ bytes: [UInt8]) -> [UInt8] { hmac(EVP_sha1(), key: key, bytes, "SHA-1") }

    private static func hmac(_ type: OpaquePointer?, key: [UInt8], _ bytes: [UInt8], _ name: String) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { k in
            bytes.withUnsafeBytes { b in
                HMAC(type, k.baseAddress, Int32(k.count), b.baseAddress?.assumingMemoryBound(to: UInt8.self), b.count, &mac, &length)
            }
        }
        precondition(result != nil, "HMAC(\(name)) failed")
        return Array(mac.prefix(Int(length)))
    }

    /// Whether `a` and `b` are equal, in time that depends on their length only (CRYPTO_memcmp):
    /// for comparing secrets, where an early exit would tell an attacker how much was right.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 } }
    }

    /// Bytes from OpenSSL's generator, for keys.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        precondition(RAND_bytes(&bytes, Int32(count)) == 1, "RAND_bytes failed")
        return bytes
    }

    private static func digest(_ bytes: [UInt8], _ type: OpaquePointer?, _ name: String) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, type, nil)
        }
        precondition(ok == 1, "EVP_Digest(\(name)) failed")
        return Array(digest.prefix(Int(length)))
    }
}
