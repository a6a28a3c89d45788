/// Why Parley refuses a WebRTC offer: each case is a 400 whose message (`description`) tells the
/// client what its offer lacks.
package enum WebRTCOfferError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No usable audio m-section (port 0 without bundle-only counts as none).
    case noAudio
    /// The audio section's transport is not SRTP's (UDP/TLS/RTP/SAVPF); WebRTC media is always
    /// DTLS-SRTP (RFC 8827 section 6.5).
    case unsupportedAudioProfile(String)
    case audioWithoutOpus(mid: String)
    /// No `m=application ... UDP/DTLS/SCTP webrtc-datachannel` section: the Realtime events
    /// travel on the data channel (the oai-events channel).
    case noDataChannel
    /// An audio or data section without `a=mid` (JSEP, RFC 8829 section 5.2.1, always writes one).
    case missingMid(media: String)
    case missingICECredentials(mid: String)
    /// ice-ufrag or ice-pwd outside RFC 8839 section 5.4's lengths (4-256, 22-256) or characters.
    case invalidICECredentials(mid: String)
    case missingFingerprint(mid: String)
    /// Fingerprints present, but none a readable sha-256 (the hashes found are listed).
    case unsupportedFingerprint(mid: String, algorithms: [String])
    /// a=setup other than actpass or active: Parley is always the DTLS server (passive).
    case unsupportedSetup(mid: String, setup: String)
    case missingBundle
    /// The audio or data section is not in the BUNDLE group.
    case notBundled(mid: String)
    /// Bundled sections share one ICE agent and one DTLS association (RFC 8843; RFC 8859 puts
    /// ice-ufrag, ice-pwd and fingerprint in its TRANSPORT category), so these must agree.
    case bundledICECredentialsDiffer
    case bundledFingerprintsDiffer
    /// RTP and RTCP must share the port (RFC 8829 section 4.1.1's `require` rtcp-mux policy).
    case rtcpMuxMissing(mid: String)

    package var description: String {
        switch self {
        case .noAudio: "the offer has no audio m-section"
        case .unsupportedAudioProfile(let proto): "the audio m-section's transport \(proto) is not UDP/TLS/RTP/SAVPF"
        case .audioWithoutOpus(let mid): "the audio m-section (mid \(mid)) does not offer opus/48000/2"
        case .noDataChannel: "the offer has no data channel (m=application ... UDP/DTLS/SCTP webrtc-datachannel)"
        case .missingMid(let media): "the \(media) m-section has no a=mid"
        case .missingICECredentials(let mid): "the m-section with mid \(mid) has no a=ice-ufrag and a=ice-pwd"
        case .invalidICECredentials(let mid): "the m-section with mid \(mid) has an a=ice-ufrag or a=ice-pwd of the wrong length or characters"
        case .missingFingerprint(let mid): "the m-section with mid \(mid) has no a=fingerprint"
        case .unsupportedFingerprint(let mid, let algorithms):
            "the m-section with mid \(mid) has no sha-256 fingerprint (only \(algorithms.joined(separator: ", ")))"
        case .unsupportedSetup(let mid, let setup): "the m-section with mid \(mid) has a=setup:\(setup); the offer must use actpass or active"
        case .missingBundle: "the offer has no a=group:BUNDLE; Parley takes audio and data on one transport"
        case .notBundled(let mid): "the m-section with mid \(mid) is not in the BUNDLE group"
        case .bundledICECredentialsDiffer: "the bundled m-sections have different ICE credentials"
        case .bundledFingerprintsDiffer: "the bundled m-sections have different DTLS fingerprints"
        case .rtcpMuxMissing(let mid): "the audio m-section (mid \(mid)) has no a=rtcp-mux"
        }
    }
}
