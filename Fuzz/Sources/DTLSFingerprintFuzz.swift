@testable import TLS

/// The fingerprint of an SDP `a=fingerprint:sha-256` attribute, the value part as the remote offer
/// carries it (RFC 8122 section 5). Checks that what parses is 32 bytes, writes back in the
/// canonical upper-case form, and that form parses to the same fingerprint.
enum DTLSFingerprintFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        let text = String(decoding: input, as: UTF8.self)
        guard let fingerprint = DTLSFingerprint(sdpValue: text) else { return }
        precondition(fingerprint.bytes.count == DTLSFingerprint.length, "\(fingerprint.bytes.count) bytes")
        let written = fingerprint.sdpValue
        precondition(written.utf8.count == 95, "written as \(written)")
        precondition(DTLSFingerprint(sdpValue: written) == fingerprint, "\(written) does not read back")
    }
}
