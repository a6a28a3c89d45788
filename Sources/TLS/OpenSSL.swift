internal import COpenSSL

/// The OpenSSL calls Parley makes outside a TLS session (a digest for the WebSocket handshake), wrapped once.
public enum OpenSSL {
    /// SHA-1 digest, used only for the WebSocket accept key (RFC 6455 section 4.2.2).
    public static func sha1(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_sha1(), nil)
        }
        precondition(ok == 1, "EVP_Digest(SHA-1) failed")
        return Array(digest.prefix(Int(length)))
    }
}
