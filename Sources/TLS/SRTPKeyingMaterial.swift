/// Which end of the DTLS handshake we are. Parley answers browsers with `a=setup:passive`, so it is
/// the server (RFC 8842 section 5); the client role exists for tests and for a future offerer.
package enum DTLSRole: Sendable {
    case client, server
}

/// The SRTP protection profiles Parley offers in DTLS's use_srtp extension (RFC 5764 section 4.1.2),
/// numbered as IANA numbers them (libsrtp2's `srtp_profile_t` uses the same numbers).
package enum SRTPProtectionProfile: UInt16, Sendable, CaseIterable {
    /// RFC 5764 section 4.1.2: AES-128 counter mode, HMAC-SHA1 with an 80-bit tag.
    case aes128CmHmacSha1_80 = 0x0001
    /// RFC 7714 section 14.2: AES-128 GCM with a 16-byte tag; preferred (one pass, shorter salt).
    case aeadAes128Gcm = 0x0007

    /// OpenSSL's names, in order of preference, for SSL_CTX_set_tlsext_use_srtp.
    static let offer = "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80"

    package var masterKeyLength: Int { 16 }

    /// RFC 3711 section 8.2 (112 bits) for counter mode; RFC 7714 section 14.2 (96 bits) for GCM.
    package var masterSaltLength: Int {
        switch self {
        case .aes128CmHmacSha1_80: 14
        case .aeadAes128Gcm: 12
        }
    }

    /// What SSL_export_keying_material must produce: two keys and two salts.
    var exportLength: Int { 2 * (masterKeyLength + masterSaltLength) }
}

/// The SRTP master keys and salts a DTLS handshake exports (RFC 5764 section 4.2): one of each per
/// direction, named for the side that writes with them.
package struct SRTPKeyingMaterial: Equatable, Sendable {
    package let profile: SRTPProtectionProfile
    package let clientWriteKey: [UInt8]
    package let serverWriteKey: [UInt8]
    package let clientWriteSalt: [UInt8]
    package let serverWriteSalt: [UInt8]

    /// Splits the exporter's output, laid out as RFC 5764 section 4.2 has it:
    /// client key ‖ server key ‖ client salt ‖ server salt.
    package init?(profile: SRTPProtectionProfile, exported: [UInt8]) {
        let key = profile.masterKeyLength, salt = profile.masterSaltLength
        guard exported.count == profile.exportLength else { return nil }
        self.profile = profile
        clientWriteKey = Array(exported[0..<key])
        serverWriteKey = Array(exported[key..<(2 * key)])
        clientWriteSalt = Array(exported[(2 * key)..<(2 * key + salt)])
        serverWriteSalt = Array(exported[(2 * key + salt)..<(2 * key + 2 * salt)])
    }

    /// Key ‖ salt of the side `writer`: the form libsrtp2 takes a master key in.
    package func masterKey(writtenBy writer: DTLSRole) -> [UInt8] {
        switch writer {
        case .client: clientWriteKey + clientWriteSalt
        case .server: serverWriteKey + serverWriteSalt
        }
    }
}
