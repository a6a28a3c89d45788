import Media
import TLS

/// What a load caller needs from Parley's SDP answer: where to send (the host candidate of the
/// bundled transport), the answerer's ICE credentials (its password keys our checks, RFC 8445
/// section 7.2.2) and the certificate fingerprint its DTLS handshake must show (RFC 8122).
struct WebRTCLoadAnswer: Equatable {
    /// The candidate's address text and port; a loopback IPv4 address only, as for every target
    /// of parley-load (LoadTarget): a load generator must not be turned on another machine.
    let host: String
    let port: UInt16
    let ufrag: String
    let password: String
    let fingerprint: DTLSFingerprint

    enum Invalid: Error, Equatable, CustomStringConvertible {
        case sdp(String)
        case noAudioSection
        case missing(String)
        case noUsableCandidate
        case notLoopback(String)

        var description: String {
            switch self {
            case .sdp(let why): "the answer is not SDP: \(why)"
            case .noAudioSection: "the answer has no audio section"
            case .missing(let what): "the answer has no \(what)"
            case .noUsableCandidate: "the answer has no UDP host candidate"
            case .notLoopback(let host): "the answer's candidate \(host) is not a loopback address (parley-load reaches loopback only)"
            }
        }
    }

    init(host: String, port: UInt16, ufrag: String, password: String, fingerprint: DTLSFingerprint) {
        self.host = host
        self.port = port
        self.ufrag = ufrag
        self.password = password
        self.fingerprint = fingerprint
    }

    init(parsing text: String) throws(Invalid) {
        let description: SessionDescription
        do throws(SDPError) { description = try SessionDescription(parsing: text) } catch { throw .sdp("\(error)") }
        // BUNDLE: the first section's transport is everyone's (RFC 9143 section 7.2.1).
        guard let audio = description.media.first(where: { $0.type == "audio" }) ?? description.media.first else { throw .noAudioSection }
        guard let ufrag = description.iceUfrag(of: audio) else { throw .missing("a=ice-ufrag") }
        guard let password = description.icePwd(of: audio) else { throw .missing("a=ice-pwd") }
        guard let sdpFingerprint = description.fingerprints(of: audio).first(where: { $0.algorithm.lowercased() == DTLSFingerprint.hashFunction }),
              let fingerprint = DTLSFingerprint(bytes: sdpFingerprint.bytes) else { throw .missing("sha-256 a=fingerprint") }
        let candidates = description.media.flatMap(\.candidates).compactMap(Self.udpCandidate)
        guard let candidate = candidates.first else { throw .noUsableCandidate }
        guard Self.isLoopbackIPv4(candidate.host) else { throw .notLoopback(candidate.host) }
        self.init(host: candidate.host, port: candidate.port, ufrag: ufrag, password: password, fingerprint: fingerprint)
    }

    /// RFC 8839 section 5.1: `foundation component transport priority address port typ type …`;
    /// the RTP component (1) over UDP.
    static func udpCandidate(_ value: String) -> (host: String, port: UInt16)? {
        let fields = value.split(separator: " ")
        guard fields.count >= 8, fields[1] == "1", fields[2].lowercased() == "udp", fields[6] == "typ",
              let port = UInt16(fields[5]), port > 0 else { return nil }
        return (String(fields[4]), port)
    }

    /// The candidate's IPv4 address as four octets (checked loopback at parsing).
    var hostOctets: [UInt8] { host.split(separator: ".").compactMap { UInt8($0) } }

    static func isLoopbackIPv4(_ host: String) -> Bool {
        let octets = host.split(separator: ".", omittingEmptySubsequences: false).map { UInt8($0) }
        return octets.count == 4 && octets.allSatisfy { $0 != nil } && octets[0] == 127
    }
}
