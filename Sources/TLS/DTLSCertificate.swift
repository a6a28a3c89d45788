internal import COpenSSL
internal import CTLS

/// The self-signed certificate Parley shows WebRTC peers in DTLS: an ECDSA P-256 key made at start,
/// as browsers make one per peer connection (RFC 8827 section 6.5: the certificate is an identity
/// only through its fingerprint in SDP, so nothing is gained by a CA or by keeping it across starts).
/// One per process serves every call; made once, then only read, which OpenSSL allows from any thread.
package final class DTLSCertificate: @unchecked Sendable {
    let key: PrivateKey
    let x509: OpaquePointer
    package let fingerprint: DTLSFingerprint

    /// ECDSA keeps the handshake's Certificate message small (a few hundred bytes, one datagram),
    /// and P-256 is what every browser signs with.
    package init(commonName: String = "parley", validityDays: Int = 30) throws(TLSError) {
        key = try PrivateKey(generating: .es256)
        guard let x509 = X509_new() else { throw .fromQueue("X509_new") }
        do throws(TLSError) {
            try Self.fill(x509, key: key.raw, commonName: commonName, validityDays: validityDays)
            var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            guard X509_digest(x509, EVP_sha256(), &digest, &length) == 1,
                  let fingerprint = DTLSFingerprint(bytes: Array(digest.prefix(Int(length)))) else { throw .fromQueue("X509_digest") }
            self.fingerprint = fingerprint
        } catch {
            X509_free(x509)
            throw error
        }
        self.x509 = x509
    }

    deinit { X509_free(x509) }

    private static func fill(_ x509: OpaquePointer, key: OpaquePointer, commonName: String, validityDays: Int) throws(TLSError) {
        // A random positive 63-bit serial: two certificates of the same name never share one
        // (RFC 5280 section 4.1.2.2), which some stacks cache by.
        var serial: UInt64 = 0
        withUnsafeMutableBytes(of: &serial) { _ = RAND_bytes($0.baseAddress?.assumingMemoryBound(to: UInt8.self), 8) }
        serial = serial & 0x7FFF_FFFF_FFFF_FFFF | 1
        guard X509_set_version(x509, 2) == 1, // X.509 v3
              ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), serial) == 1,
              // A day back: a peer whose clock is a little behind must not find it not yet valid.
              X509_gmtime_adj(X509_getm_notBefore(x509), -86_400) != nil,
              X509_gmtime_adj(X509_getm_notAfter(x509), validityDays * 86_400) != nil,
              let name = X509_get_subject_name(x509),
              X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, Array(commonName.utf8), Int32(commonName.utf8.count), -1, 0) == 1,
              X509_set_issuer_name(x509, name) == 1,
              X509_set_pubkey(x509, key) == 1,
              X509_sign(x509, key, EVP_sha256()) > 0 else { throw .fromQueue("cannot make the DTLS certificate") }
    }
}

/// An OpenSSL `SSL_CTX` for DTLS-SRTP: one role, the certificate, DTLS 1.2, the SRTP profiles
/// offered, and the peer's certificate required (its fingerprint is checked by each endpoint).
/// Configured once, then only read; every call's endpoint is made from it.
package final class DTLSContext: @unchecked Sendable {
    let raw: OpaquePointer
    package let role: DTLSRole
    /// Ours, for the SDP answer's a=fingerprint.
    package let fingerprint: DTLSFingerprint

    /// ECDHE with ECDSA and AEAD ciphers: what browsers offer first, and all an ECDSA certificate
    /// can sign for.
    static let ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305"

    package init(certificate: DTLSCertificate, role: DTLSRole) throws(TLSError) {
        try OpenSSL.load()
        guard let ctx = SSL_CTX_new(role == .server ? DTLS_server_method() : DTLS_client_method()) else {
            throw .fromQueue("SSL_CTX_new")
        }
        guard parley_dtls_ctx_configure(ctx, SRTPProtectionProfile.offer) == 1,
              SSL_CTX_set_cipher_list(ctx, Self.ciphers) == 1,
              SSL_CTX_use_certificate(ctx, certificate.x509) == 1,
              SSL_CTX_use_PrivateKey(ctx, certificate.key.raw) == 1,
              SSL_CTX_check_private_key(ctx) == 1 else {
            SSL_CTX_free(ctx)
            throw .fromQueue("cannot configure the DTLS context")
        }
        raw = ctx
        self.role = role
        fingerprint = certificate.fingerprint
    }

    deinit { SSL_CTX_free(raw) }
}
