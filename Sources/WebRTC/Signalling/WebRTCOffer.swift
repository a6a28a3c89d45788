import Media

/// What Parley needs from a WebRTC offer (a browser's or aiortc's, posted to /v1/realtime/calls),
/// read out of a parsed description and checked; an offer Parley cannot answer throws a
/// `WebRTCOfferError` that becomes the 400's message.
///
/// Parley answers as an ICE-lite agent with one UDP port per loop, one DTLS association and one
/// SCTP association per call, so it needs the audio and the data channel on one transport: it
/// requires BUNDLE (RFC 8843). Every browser and aiortc offer it (Chrome's default bundle policy
/// puts all sections in one group), and without it the peer would run a separate ICE agent and
/// DTLS handshake per section, which Parley does not implement; refusing with a clear 400 is
/// better than an answer whose second transport never connects.
package struct WebRTCOffer: Equatable, Sendable {
    /// One m-section of the offer, as the answer mirrors it: JSEP's answer has the offer's sections
    /// in the same order (RFC 8829 section 5.3.1).
    package enum Section: Equatable, Sendable {
        case audio
        case data
        /// A section Parley does not take (video, a second audio): answered with port 0.
        case rejected(type: String, proto: String, format: String, mid: String?)
    }

    package var sections: [Section]
    package var audioMid: String
    /// The audio section's m= protocol, which the answer repeats (RFC 8829 section 5.3.1).
    package var audioProto: String
    package var opusPayloadType: UInt8
    /// The offer's `a=fmtp` parameters for Opus, verbatim (e.g. "minptime=10;useinbandfec=1").
    package var opusFormatParameters: String?
    /// telephone-event at Opus's 48 kHz clock (RFC 4733 section 2.1: the audio's clock), if offered.
    package var telephoneEventPayloadType: UInt8?
    package var audioDirection: SDPDirection
    /// The SSRC the peer announces for its audio (RFC 5576), if it does.
    package var remoteAudioSSRC: UInt32?
    package var dataMid: String
    /// The peer's SCTP port; 5000 when the offer does not say (RFC 8841 section 5.2).
    package var sctpPort: UInt16
    /// The largest message the peer takes; 65536 when the offer does not say, 0 for no limit
    /// (RFC 8841 section 6.1).
    package var maxMessageSize: UInt64
    package var iceUfrag: String
    package var icePwd: String
    /// The peer certificate's sha-256 fingerprint, which DTLS must match (RFC 8122 section 5).
    package var fingerprint: SDPFingerprint
    /// The BUNDLE group's mids, in the offer's order.
    package var bundle: [String]

    /// The protocols of an audio section Parley takes: DTLS-SRTP's (RFC 5764 section 8), and the
    /// older RTP/SAVPF that early DTLS-SRTP offers used (RFC 8829 section 5.1.2 asks answerers to
    /// accept it).
    static let audioProtocols: Set<String> = ["UDP/TLS/RTP/SAVPF", "UDP/TLS/RTP/SAVP", "RTP/SAVPF"]

    package init(_ description: SessionDescription) throws(WebRTCOfferError) {
        let media = description.media
        // A port-0 section is rejected unless bundle-only (RFC 8843 section 6).
        func usable(_ section: MediaDescription) -> Bool { section.port != 0 || section.isBundleOnly }
        guard let audioIndex = media.firstIndex(where: { $0.type == "audio" && usable($0) }) else { throw .noAudio }
        let audio = media[audioIndex]
        guard Self.audioProtocols.contains(audio.proto) else { throw .unsupportedAudioProfile(audio.proto) }
        guard let audioMid = audio.mid else { throw .missingMid(media: "audio") }

        let rtpMaps = audio.payloadTypes.compactMap { audio.rtpMap(payloadType: $0) }
        // RFC 7587 section 7: Opus is always named opus/48000/2, whatever it carries.
        guard let opus = rtpMaps.first(where: {
            $0.encoding.lowercased() == "opus" && $0.clockRate == 48_000 && ($0.channels ?? 2) == 2
        }) else { throw .audioWithoutOpus(mid: audioMid) }
        let telephoneEvent = rtpMaps.first { $0.encoding.lowercased() == "telephone-event" && $0.clockRate == 48_000 }

        guard let dataIndex = media.firstIndex(where: {
            $0.type == "application" && $0.proto == "UDP/DTLS/SCTP" && $0.formats.contains("webrtc-datachannel") && usable($0)
        }) else { throw .noDataChannel }
        let data = media[dataIndex]
        guard let dataMid = data.mid else { throw .missingMid(media: "application") }

        guard let bundle = description.bundle else { throw .missingBundle }
        for mid in [audioMid, dataMid] where !bundle.contains(mid) { throw .notBundled(mid: mid) }

        let (ufrag, pwd) = try Self.iceCredentials(of: audio, mid: audioMid, in: description)
        let dataCredentials = try Self.iceCredentials(of: data, mid: dataMid, in: description)
        guard dataCredentials == (ufrag, pwd) else { throw .bundledICECredentialsDiffer }

        let fingerprint = try Self.fingerprint(of: audio, mid: audioMid, in: description)
        guard try Self.fingerprint(of: data, mid: dataMid, in: description) == fingerprint else { throw .bundledFingerprintsDiffer }

        for (section, mid) in [(audio, audioMid), (data, dataMid)] {
            // JSEP's offerer writes actpass (RFC 8842 section 5.2); active leaves the server role to
            // Parley too. An absent a=setup means active (RFC 4145 section 4).
            switch description.setup(of: section) {
            case .actpass, .active, nil: break
            case let setup?: throw .unsupportedSetup(mid: mid, setup: setup.rawValue)
            }
        }
        guard audio.rtcpMux else { throw .rtcpMuxMissing(mid: audioMid) }

        sections = media.indices.map { index in
            if index == audioIndex { return .audio }
            if index == dataIndex { return .data }
            let section = media[index]
            return .rejected(type: section.type, proto: section.proto, format: section.formats.first ?? "0", mid: section.mid)
        }
        self.audioMid = audioMid
        audioProto = audio.proto
        opusPayloadType = opus.payloadType
        opusFormatParameters = audio.formatParameters(payloadType: opus.payloadType)
        telephoneEventPayloadType = telephoneEvent?.payloadType
        audioDirection = description.direction(of: audio)
        remoteAudioSSRC = audio.ssrcs.first
        self.dataMid = dataMid
        sctpPort = data.sctpPort ?? 5000
        maxMessageSize = data.maxMessageSize ?? 65_536
        iceUfrag = ufrag
        icePwd = pwd
        self.fingerprint = fingerprint
        self.bundle = bundle
    }

    private static func iceCredentials(of section: MediaDescription, mid: String, in description: SessionDescription) throws(WebRTCOfferError) -> (String, String) {
        guard let ufrag = description.iceUfrag(of: section), let pwd = description.icePwd(of: section) else {
            throw .missingICECredentials(mid: mid)
        }
        // RFC 8839 section 5.4: ice-char is ALPHA / DIGIT / "+" / "/"; ufrag 4 to 256 of them,
        // pwd 22 to 256 (at least 24 bits and 128 bits of randomness).
        guard (4...256).contains(ufrag.utf8.count), (22...256).contains(pwd.utf8.count),
              ufrag.utf8.allSatisfy(isICEChar), pwd.utf8.allSatisfy(isICEChar)
        else { throw .invalidICECredentials(mid: mid) }
        return (ufrag, pwd)
    }

    private static func isICEChar(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2B || byte == 0x2F
    }

    /// The section's sha-256 fingerprint. Parley's DTLS checks the peer's certificate against
    /// sha-256 only, the hash every browser offers (RFC 8122 section 5 lets an offer carry several).
    private static func fingerprint(of section: MediaDescription, mid: String, in description: SessionDescription) throws(WebRTCOfferError) -> SDPFingerprint {
        let fingerprints = description.fingerprints(of: section)
        let written = section.attributes.contains(named: "fingerprint") || description.attributes.contains(named: "fingerprint")
        guard written else { throw .missingFingerprint(mid: mid) }
        guard let sha256 = fingerprints.first(where: { $0.algorithm == "sha-256" && $0.bytes.count == 32 }) else {
            throw .unsupportedFingerprint(mid: mid, algorithms: fingerprints.map(\.algorithm))
        }
        return sha256
    }
}
