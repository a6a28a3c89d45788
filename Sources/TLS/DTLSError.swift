/// Why a DTLS endpoint stopped, or refused a call. Any of them ends the WebRTC call: the caller
/// sends what `DTLSEndpoint.close()` returns (an alert or close_notify, if OpenSSL has one) and
/// tears the call down.
package enum DTLSError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The endpoint could not be made (OpenSSL's reasons).
    case setup(String)
    /// The handshake failed: an alert from the peer, or a message OpenSSL refused.
    case handshake(String)
    /// The peer's certificate does not hash to the fingerprint its SDP gave (RFC 8122 section 5),
    /// or it showed none: someone other than the signalled peer is on the path.
    case fingerprintMismatch(expected: DTLSFingerprint, actual: DTLSFingerprint?)
    /// The handshake agreed no SRTP profile we know (the peer left out use_srtp, RFC 5764 section 4.1.2).
    case noSRTPProfile
    /// SSL_export_keying_material failed.
    case keyExport(String)
    /// A datagram longer than any DTLS record can be; nothing was read from it.
    case datagramTooLarge(Int)
    /// More application data than one record holds (2^14 bytes, RFC 6347 section 4.1).
    case applicationDataTooLarge(Int)
    /// Application data before the handshake ended, or after the endpoint closed or failed.
    case notConnected
    /// The last flight went unanswered through every retransmission (RFC 6347 section 4.2.4).
    case retransmissionsExhausted
    /// A read or write on the established association failed (a fatal alert, say).
    case failed(String)

    package var description: String {
        switch self {
        case .setup(let why): "DTLS setup failed: \(why)"
        case .handshake(let why): "DTLS handshake failed: \(why)"
        case .fingerprintMismatch(let expected, let actual):
            "the peer's certificate fingerprint \(actual.map(\.description) ?? "(no certificate)") is not the signalled \(expected)"
        case .noSRTPProfile: "the DTLS handshake agreed no SRTP protection profile"
        case .keyExport(let why): "the SRTP keys could not be exported: \(why)"
        case .datagramTooLarge(let length): "a DTLS datagram of \(length) bytes is too large"
        case .applicationDataTooLarge(let length): "\(length) bytes of application data do not fit one DTLS record"
        case .notConnected: "the DTLS association is not established"
        case .retransmissionsExhausted: "the DTLS peer did not answer any retransmission"
        case .failed(let why): "DTLS failed: \(why)"
        }
    }
}
