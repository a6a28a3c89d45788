internal import COpenSSL

/// The two public-key signature schemes JSON Web Tokens are checked with here (RFC 7518 section
/// 3.1): RSA PKCS #1 v1.5 with SHA-256 (RS256) and ECDSA on P-256 with SHA-256 (ES256). A key has
/// exactly one scheme, fixed by what the key is, never by what a token claims: that binding is
/// what makes algorithm confusion impossible.
public enum SignatureScheme: String, Sendable {
    case rs256 = "RS256"
    case es256 = "ES256"
}

/// An OpenSSL `EVP_PKEY` holding a public key (`PublicKey`) or a key pair (`PrivateKey`). Loaded
/// once, then only read, which OpenSSL 3 allows from any thread.
public class SigningKeyBase: @unchecked Sendable {
    let raw: OpaquePointer
    public let scheme: SignatureScheme

    /// RSA keys shorter than this are refused (NIST SP 800-131A: 2048 bits since 2014).
    public static let minimumRSABits: Int32 = 2048

    init(raw: OpaquePointer) throws(TLSError) {
        switch EVP_PKEY_get_base_id(raw) {
        case EVP_PKEY_RSA:
            guard EVP_PKEY_get_bits(raw) >= Self.minimumRSABits else {
                EVP_PKEY_free(raw)
                throw TLSError("an RSA key of \(EVP_PKEY_get_bits(raw)) bits is too short (at least \(Self.minimumRSABits))")
            }
            scheme = .rs256
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            // ES256 is P-256 only (RFC 7518 section 3.4); a key on another curve has no JWS name here.
            guard EVP_PKEY_get_group_name(raw, &name, name.count, &length) == 1,
                  String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1" else {
                EVP_PKEY_free(raw)
                throw TLSError("an EC key must be on P-256 (prime256v1) for ES256")
            }
            scheme = .es256
        default:
            EVP_PKEY_free(raw)
            throw TLSError("the key is neither RSA nor EC P-256")
        }
        self.raw = raw
    }

    deinit { EVP_PKEY_free(raw) }

    /// The PEM of the public half (`-----BEGIN PUBLIC KEY-----`), for handing to a verifier.
    public var publicPEM: String {
        let bio = BIO_new(BIO_s_mem())!
        defer { BIO_free(bio) }
        precondition(PEM_write_bio_PUBKEY(bio, raw) == 1, "PEM_write_bio_PUBKEY failed")
        return Self.drain(bio)
    }

    static func drain(_ bio: OpaquePointer) -> String {
        var bytes = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
        let read = BIO_read(bio, &bytes, Int32(bytes.count))
        return String(decoding: bytes.prefix(Int(max(read, 0))), as: UTF8.self)
    }

    static func withPEM<T>(_ pem: [UInt8], _ body: (OpaquePointer) -> T) -> T {
        pem.withUnsafeBytes { bytes in
            let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count))!
            defer { BIO_free(bio) }
            return body(bio)
        }
    }
}

/// A public key that checks RS256 or ES256 signatures.
public final class PublicKey: SigningKeyBase, @unchecked Sendable {
    /// A key from PEM (`BEGIN PUBLIC KEY`, SubjectPublicKeyInfo).
    public init(pem: [UInt8]) throws(TLSError) {
        try OpenSSL.load()
        guard let raw = Self.withPEM(pem, { PEM_read_bio_PUBKEY($0, nil, nil, nil) }) else {
            throw TLSError.fromQueue("not a PEM public key")
        }
        try super.init(raw: raw)
    }

    /// Whether `signature` is this key's over `message`. ES256 signatures come as JWS has them,
    /// r ‖ s in 32 bytes each (RFC 7518 section 3.4); OpenSSL wants DER, made here.
    public func verify(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        let der: [UInt8]
        switch scheme {
        case .rs256: der = signature
        case .es256:
            guard signature.count == 64 else { return false }
            der = ECDSASignature.der(r: signature[0..<32], s: signature[32..<64])
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, raw) == 1 else {
            ERR_clear_error()
            return false
        }
        let result = der.withUnsafeBufferPointer { s in
            message.withUnsafeBufferPointer { m in EVP_DigestVerify(context, s.baseAddress, s.count, m.baseAddress, m.count) }
        }
        // A malformed signature leaves reasons on the thread's queue; they must not be blamed on
        // the next TLS call of this loop.
        if result != 1 { ERR_clear_error() }
        return result == 1
    }
}

/// A key pair that makes RS256 or ES256 signatures: for `parley token`, the load client and tests.
public final class PrivateKey: SigningKeyBase, @unchecked Sendable {
    /// A key from PEM (`BEGIN PRIVATE KEY`, `BEGIN EC PRIVATE KEY`, `BEGIN RSA PRIVATE KEY`), unencrypted.
    public init(pem: [UInt8]) throws(TLSError) {
        try OpenSSL.load()
        guard let raw = Self.withPEM(pem, { PEM_read_bio_PrivateKey($0, nil, nil, nil) }) else {
            throw TLSError.fromQueue("not an unencrypted PEM private key")
        }
        try super.init(raw: raw)
    }

    /// A fresh key: P-256 for ES256, 2048-bit RSA for RS256.
    public init(generating scheme: SignatureScheme) throws(TLSError) {
        try OpenSSL.load()
        guard let context = EVP_PKEY_CTX_new_id(scheme == .es256 ? EVP_PKEY_EC : EVP_PKEY_RSA, nil) else { throw TLSError.fromQueue("EVP_PKEY_CTX_new_id") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
              (scheme == .es256 ? EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1)
                                : EVP_PKEY_CTX_set_rsa_keygen_bits(context, Self.minimumRSABits)) == 1,
              EVP_PKEY_keygen(context, &key) == 1, let key else { throw TLSError.fromQueue("EVP_PKEY_keygen") }
        try super.init(raw: key)
    }

    /// The key pair as PKCS #8 PEM (`BEGIN PRIVATE KEY`).
    public var privatePEM: String {
        let bio = BIO_new(BIO_s_mem())!
        defer { BIO_free(bio) }
        precondition(PEM_write_bio_PrivateKey(bio, raw, nil, nil, 0, nil, nil) == 1, "PEM_write_bio_PrivateKey failed")
        return Self.drain(bio)
    }

    /// The signature over `message`, in JWS form (ES256: r ‖ s, 64 bytes).
    public func sign(_ message: [UInt8]) throws(TLSError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw TLSError.fromQueue("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, raw) == 1 else { throw TLSError.fromQueue("EVP_DigestSignInit") }
        var length = 0
        guard message.withUnsafeBufferPointer({ EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }) == 1 else {
            throw TLSError.fromQueue("EVP_DigestSign")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard message.withUnsafeBufferPointer({ EVP_DigestSign(context, &signature, &length, $0.baseAddress, $0.count) }) == 1 else {
            throw TLSError.fromQueue("EVP_DigestSign")
        }
        signature.removeLast(signature.count - length)
        guard scheme == .es256 else { return signature }
        guard let raw = ECDSASignature.raw(der: signature) else { throw TLSError("OpenSSL made an ECDSA signature that is not DER") }
        return raw
    }
}

/// ECDSA signatures between JWS's fixed-width r ‖ s and the DER `SEQUENCE { INTEGER r, INTEGER s }`
/// OpenSSL reads and writes (RFC 7518 section 3.4; X.690 section 8.3 for INTEGER).
enum ECDSASignature {
    static func der(r: ArraySlice<UInt8>, s: ArraySlice<UInt8>) -> [UInt8] {
        let integers = integer(r) + integer(s)
        // At most 2 × 35 bytes: the length always fits the short form.
        return [0x30, UInt8(integers.count)] + integers
    }

    /// A DER INTEGER of an unsigned big-endian value: no leading zero bytes, but one zero byte
    /// when the top bit is set (else it would read as negative).
    private static func integer(_ value: ArraySlice<UInt8>) -> [UInt8] {
        var bytes = Array(value.drop { $0 == 0 })
        if bytes.isEmpty { bytes = [0] }
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return [0x02, UInt8(bytes.count)] + bytes
    }

    /// r ‖ s, 32 bytes each, from OpenSSL's DER; nil if it is not a P-256 signature.
    static func raw(der: [UInt8]) -> [UInt8]? {
        guard der.count >= 8, der[0] == 0x30, Int(der[1]) == der.count - 2 else { return nil }
        var offset = 2
        var out: [UInt8] = []
        for _ in 0..<2 {
            guard offset + 2 <= der.count, der[offset] == 0x02 else { return nil }
            let length = Int(der[offset + 1])
            guard offset + 2 + length <= der.count else { return nil }
            let value = der[(offset + 2)..<(offset + 2 + length)].drop { $0 == 0 }
            guard value.count <= 32 else { return nil }
            out += [UInt8](repeating: 0, count: 32 - value.count) + value
            offset += 2 + length
        }
        return offset == der.count ? out : nil
    }
}
