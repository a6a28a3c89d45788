internal import COpenSSL
internal import CTLS
#if canImport(Glibc)
import Glibc
#endif

/// A TLS failure, in OpenSSL's words: "certificate verify failed (self-signed certificate)".
public struct TLSError: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }

    /// `context` followed by the reasons on this thread's OpenSSL error queue, which it empties:
    /// a stale entry would otherwise be blamed on the next connection's call.
    static func fromQueue(_ context: String) -> TLSError {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            if let reason = ERR_reason_error_string(code) { reasons.append(String(cString: reason)) }
        }
        return TLSError(reasons.isEmpty ? context : "\(context): \(reasons.joined(separator: "; "))")
    }
}

/// An OpenSSL `SSL_CTX`: the settings and credentials every TLS session is made from. Configured
/// once, then only read, which OpenSSL allows from any thread; each session holds its own reference,
/// so a context replaced by a certificate reload lives on until its last session ends.
public final class TLSContext: @unchecked Sendable {
    let raw: OpaquePointer
    public let isServer: Bool
    /// Server: when the certificate expires, in seconds since the epoch.
    public let certificateNotAfter: Int?

    /// ECDHE key exchange with AEAD ciphers only, for TLS 1.2; TLS 1.3's suites are all modern.
    static let tls12Ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
        + "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

    private init(raw: OpaquePointer, isServer: Bool, certificateNotAfter: Int?) {
        self.raw = raw
        self.isServer = isServer
        self.certificateNotAfter = certificateNotAfter
    }

    deinit { SSL_CTX_free(raw) }

    /// A server context from PEM files: the certificate chain (leaf first) and its private key.
    public static func server(certificateFile: String, keyFile: String) throws(TLSError) -> TLSContext {
        try OpenSSL.load()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw .fromQueue("SSL_CTX_new") }
        parley_tls_ctx_configure(ctx)
        parley_tls_ctx_configure_server(ctx)
        do throws(TLSError) {
            guard SSL_CTX_set_cipher_list(ctx, tls12Ciphers) == 1 else { throw .fromQueue("cipher list") }
            guard SSL_CTX_use_certificate_chain_file(ctx, certificateFile) == 1 else {
                throw .fromQueue("cannot load the certificate \(certificateFile)")
            }
            guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) == 1 else {
                throw .fromQueue("cannot load the private key \(keyFile)")
            }
            guard SSL_CTX_check_private_key(ctx) == 1 else {
                throw .fromQueue("the private key \(keyFile) does not match the certificate \(certificateFile)")
            }
        } catch {
            SSL_CTX_free(ctx)
            throw error
        }
        return TLSContext(raw: ctx, isServer: true, certificateNotAfter: notAfter(SSL_CTX_get0_certificate(ctx)))
    }

    /// A client context that verifies servers against the system's trust store and, when given,
    /// the CA certificates in `caFile` (PEM) as well.
    public static func client(caFile: String? = nil) throws(TLSError) -> TLSContext {
        try OpenSSL.load()
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw .fromQueue("SSL_CTX_new") }
        parley_tls_ctx_configure(ctx)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        do throws(TLSError) {
            guard SSL_CTX_set_default_verify_paths(ctx) == 1 else { throw .fromQueue("the system trust store") }
            if let caFile, SSL_CTX_load_verify_locations(ctx, caFile, nil) != 1 {
                throw .fromQueue("cannot load CA certificates from \(caFile)")
            }
        } catch {
            SSL_CTX_free(ctx)
            throw error
        }
        return TLSContext(raw: ctx, isServer: false, certificateNotAfter: nil)
    }

    /// Protocol versions, as OpenSSL numbers them.
    enum Version: Int32 {
        case tls11 = 0x0302, tls12 = 0x0303, tls13 = 0x0304
    }

    /// A client limited to the protocol versions `minimum...maximum`, at OpenSSL security level 0
    /// so that old versions are really offered: tests play old clients with it.
    static func client(caFile: String?, minimum: Version, maximum: Version) throws(TLSError) -> TLSContext {
        let context = try client(caFile: caFile)
        guard parley_tls_ctx_set_versions(context.raw, minimum.rawValue, maximum.rawValue, 0) == 1,
              SSL_CTX_set_cipher_list(context.raw, "DEFAULT:@SECLEVEL=0") == 1 else { throw .fromQueue("protocol versions") }
        return context
    }

    private static func notAfter(_ certificate: OpaquePointer?) -> Int? {
        guard let certificate, let time = X509_get0_notAfter(certificate) else { return nil }
        var days: Int32 = 0, seconds: Int32 = 0
        guard ASN1_TIME_diff(&days, &seconds, nil, time) == 1 else { return nil }
        return Int(Glibc.time(nil)) + Int(days) * 86_400 + Int(seconds)
    }
}
