import Media

/// Parley's answer to a validated offer, per JSEP (RFC 8829 section 5.3.1): the offer's m-sections
/// in the same order with the same mids, audio and data bundled on one transport, anything else
/// rejected with port 0.
///
/// Parley is an ICE-lite agent (RFC 8445 section 2.5: it only answers checks, so the peer's
/// candidates are not needed) and always the DTLS server (`a=setup:passive`, RFC 8842 section 5),
/// so the browser's DTLS ClientHello follows its first successful check. Its candidates are all
/// in the answer, closed by `a=end-of-candidates` (RFC 8838): there is nothing to trickle.
package struct WebRTCAnswer: Sendable {
    /// One of Parley's host candidates: a loop's UDP socket.
    package struct HostCandidate: Equatable, Sendable {
        package var address: String
        package var port: UInt16

        package init(address: String, port: UInt16) {
            self.address = address
            self.port = port
        }
    }

    /// Parley's own SCTP port and the largest message it takes (RFC 8841 sections 5 and 6): 256 KiB,
    /// Chrome's own, well above the Realtime events' size.
    package static let sctpPort: UInt16 = 5000
    package static let maxMessageSize = 262_144

    package var offer: WebRTCOffer
    package var iceUfrag: String
    package var icePwd: String
    /// The sha-256 hash of Parley's DTLS certificate (32 bytes).
    package var certificateFingerprint: [UInt8]
    package var candidates: [HostCandidate]
    package var audioSSRC: UInt32
    /// The RTCP CNAME of Parley's audio (RFC 7022: unique per call is enough).
    package var cname: String
    /// The o= line's session id (RFC 8829 section 5.2.1: random, 63 bits).
    package var sessionID: UInt64
    /// The a=msid identifiers of Parley's audio track (RFC 8830 section 2).
    package var streamID: String
    package var trackID: String

    package init(offer: WebRTCOffer, iceUfrag: String, icePwd: String, certificateFingerprint: [UInt8], candidates: [HostCandidate],
                 audioSSRC: UInt32, cname: String, sessionID: UInt64, streamID: String = "parley", trackID: String = "parley-audio") {
        self.offer = offer
        self.iceUfrag = iceUfrag
        self.icePwd = icePwd
        self.certificateFingerprint = certificateFingerprint
        self.candidates = candidates
        self.audioSSRC = audioSSRC
        self.cname = cname
        self.sessionID = sessionID
        self.streamID = streamID
        self.trackID = trackID
    }

    package var sessionDescription: SessionDescription {
        // RFC 8829 section 5.2.1: a placeholder address in o=, not to leak a local one.
        var session = SessionDescription(lines: [
            SDPLine("v", "0"),
            SDPLine("o", "- \(sessionID & 0x7FFF_FFFF_FFFF_FFFF) 2 IN IP4 0.0.0.0"),
            SDPLine("s", "-"),
            SDPLine("t", "0 0"),
        ])
        // Only the accepted sections are bundled; a rejected one leaves the group (RFC 8843).
        let bundled = offer.sections.compactMap { section -> String? in
            switch section {
            case .audio: offer.audioMid
            case .data: offer.dataMid
            case .rejected: nil
            }
        }
        session.attributes = [SDPAttribute("ice-lite"), SDPAttribute("group", SDPGroup(semantics: "BUNDLE", mids: bundled).attributeValue)]
        session.media = offer.sections.map { section in
            switch section {
            case .audio: audio
            case .data: data
            case .rejected(let type, let proto, let format, let mid):
                MediaDescription(type: type, port: 0, proto: proto, formats: [format], lines: [SDPLine("c", "IN IP4 0.0.0.0")],
                                 attributes: mid.map { [SDPAttribute("mid", $0)] } ?? [])
            }
        }
        return session
    }

    /// The answer as an `application/sdp` body.
    package var bytes: [UInt8] { sessionDescription.bytes }

    /// The port and address of the m= and c= lines: the first candidate, the default destination
    /// (RFC 8839), or JSEP's placeholder 9 and 0.0.0.0 without one.
    private var defaultDestination: (port: UInt16, connection: SDPConnection) {
        guard let first = candidates.first else { return (9, SDPConnection(address: "0.0.0.0")) }
        return (first.port, SDPConnection(address: first.address))
    }

    private var transport: [SDPAttribute] {
        [
            SDPAttribute("ice-ufrag", iceUfrag),
            SDPAttribute("ice-pwd", icePwd),
            SDPAttribute("fingerprint", SDPFingerprint(algorithm: "sha-256", bytes: certificateFingerprint).attributeValue),
            SDPAttribute("setup", SDPSetup.passive.rawValue),
        ]
    }

    private var candidateAttributes: [SDPAttribute] {
        let lines = candidates.enumerated().map { index, candidate in
            // RFC 8445 section 5.1.2.1: host type preference 126, local preference falling with the
            // index so the first is preferred, component 1.
            let localPreference = UInt32(65_535 - min(index, 65_535))
            let priority = 126 << 24 | localPreference << 8 | 255
            return SDPAttribute("candidate", "\(index + 1) 1 udp \(priority) \(candidate.address) \(candidate.port) typ host")
        }
        return lines + [SDPAttribute("end-of-candidates")]
    }

    private var audio: MediaDescription {
        let (port, connection) = defaultDestination
        var formats = [String(offer.opusPayloadType)]
        var attributes = [SDPAttribute("mid", offer.audioMid)] + transport
        let direction = offer.audioDirection.reversed
        attributes.append(SDPAttribute(direction.rawValue))
        attributes.append(SDPAttribute("rtcp-mux"))
        let sends = direction == .sendrecv || direction == .sendonly
        if sends { attributes.append(SDPAttribute("msid", streamID + " " + trackID)) }
        attributes.append(SDPAttribute("rtpmap", SDPRTPMap(payloadType: offer.opusPayloadType, encoding: "opus", clockRate: 48_000, channels: 2).attributeValue))
        // RFC 7587 section 6.1's parameters: in-band FEC on, and 10 ms the shortest packet Parley takes.
        attributes.append(SDPAttribute("fmtp", "\(offer.opusPayloadType) minptime=10;useinbandfec=1"))
        if let telephoneEvent = offer.telephoneEventPayloadType {
            formats.append(String(telephoneEvent))
            attributes.append(SDPAttribute("rtpmap", SDPRTPMap(payloadType: telephoneEvent, encoding: "telephone-event", clockRate: 48_000).attributeValue))
            // RFC 4733 section 3.2: events 0-15 are the DTMF digits.
            attributes.append(SDPAttribute("fmtp", "\(telephoneEvent) 0-15"))
        }
        if sends { attributes.append(SDPAttribute("ssrc", SDPSSRCAttribute(ssrc: audioSSRC, attribute: "cname", value: cname).attributeValue)) }
        attributes += candidateAttributes
        return MediaDescription(type: "audio", port: port, proto: offer.audioProto, formats: formats,
                                lines: [SDPLine("c", connection.lineValue)], attributes: attributes)
    }

    private var data: MediaDescription {
        let (port, connection) = defaultDestination
        var attributes = [SDPAttribute("mid", offer.dataMid)] + transport
        attributes.append(SDPAttribute("sctp-port", String(Self.sctpPort)))
        attributes.append(SDPAttribute("max-message-size", String(Self.maxMessageSize)))
        attributes += candidateAttributes
        return MediaDescription(type: "application", port: port, proto: "UDP/DTLS/SCTP", formats: ["webrtc-datachannel"],
                                lines: [SDPLine("c", connection.lineValue)], attributes: attributes)
    }
}
