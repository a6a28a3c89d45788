import Media

/// What a phone call's SDP offer asks of its audio, read for an answer (RFC 3264 section 6): the
/// G.711 codec Parley will use (µ-law or A-law, the first the offerer lists, as it prefers it),
/// RFC 4733's telephone-event if offered, where the caller's RTP comes from, and the direction.
/// Parley answers audio only, at 8 kHz in 20 ms packets; every other codec and media section is
/// declined (its port 0 in the answer).
package struct PhoneAudioOffer: Equatable, Sendable {
    package enum Codec: Equatable, Sendable {
        case pcmu, pcma
        package var payloadType: UInt8 { self == .pcmu ? 0 : 8 }
        package var encoding: String { self == .pcmu ? "PCMU" : "PCMA" }
    }

    /// The offer's audio section, by its place among the sections.
    package let index: Int
    package let codec: Codec
    /// The offer's payload type for telephone-event at 8 kHz, if it offered one.
    package let telephoneEvent: UInt8?
    /// Where the offerer receives RTP (and, symmetric RTP, sends from): the section's or the
    /// session's connection address, and the section's port. Port 0 or 0.0.0.0 is a call on hold.
    package let address: String
    package let port: UInt16
    package let direction: SDPDirection
    /// The offer's ptime, if given (Parley sends 20 ms whatever it says: RFC 3551 section 4.5's default).
    package let ptime: Int?
    /// The far end's SRTP key, when its section is RTP/SAVP (SDES, RFC 4568): what it sends with.
    package let crypto: SDESCrypto?

    /// Why an offer cannot be answered: each is a 488 Not Acceptable Here (RFC 3261 section 13.3.1.3).
    package enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        case noAudio
        case noCommonCodec(offered: [String])
        case noAddress
        case secure(String)

        package var description: String {
            switch self {
            case .noAudio: "the offer has no RTP/AVP or RTP/SAVP audio section"
            case .noCommonCodec(let offered): "no codec in common: Parley answers PCMU or PCMA at 8 kHz, the offer has \(offered.isEmpty ? "none" : offered.joined(separator: ", "))"
            case .noAddress: "the offer's audio section has no connection address"
            case .secure(let proto): "the offer asks for \(proto); Parley takes RTP/AVP, or RTP/SAVP with an a=crypto line of \(SDESCrypto.suite) (no MKI, no session parameters)"
            }
        }
    }

    /// What Parley assumes of a caller that sent no offer, until its answer comes in the ACK
    /// (RFC 3264 section 5): µ-law and events as Parley offers them, its address not yet known.
    package static func awaitingAnswer(from address: String) -> PhoneAudioOffer {
        PhoneAudioOffer(index: 0, codec: .pcmu, telephoneEvent: 101, address: address, port: 0, direction: .inactive, ptime: 20, crypto: nil)
    }

    private init(index: Int, codec: Codec, telephoneEvent: UInt8?, address: String, port: UInt16, direction: SDPDirection, ptime: Int?, crypto: SDESCrypto?) {
        self.index = index
        self.codec = codec
        self.telephoneEvent = telephoneEvent
        self.address = address
        self.port = port
        self.direction = direction
        self.ptime = ptime
        self.crypto = crypto
    }

    /// Parley's own offer, for an INVITE that came without one or a call it places: PCMU, PCMA
    /// and telephone-event, received at `address`:`port`; RTP/SAVP with `crypto` (our key) when given.
    package static func offer(address: String, port: UInt16, sessionID: UInt64, version: UInt64, crypto: SDESCrypto? = nil) -> SessionDescription {
        let connection = SDPConnection(address: address)
        var attributes = [SDPAttribute("rtpmap", "0 PCMU/8000"), SDPAttribute("rtpmap", "8 PCMA/8000"), SDPAttribute("rtpmap", "101 telephone-event/8000"),
                          SDPAttribute("fmtp", "101 0-15"), SDPAttribute("ptime", "20"), SDPAttribute("sendrecv")]
        if let crypto { attributes.append(SDPAttribute("crypto", crypto.attribute)) }
        let media = MediaDescription(type: "audio", port: port, proto: crypto == nil ? "RTP/AVP" : "RTP/SAVP", formats: ["0", "8", "101"], attributes: attributes)
        let lines = [SDPLine("v", "0"), SDPLine("o", "parley \(sessionID) \(version) IN \(connection.addressType) \(address)"),
                     SDPLine("s", "parley"), SDPLine("c", "IN \(connection.addressType) \(address)"), SDPLine("t", "0 0")]
        return SessionDescription(lines: lines, media: [media])
    }

    package init(_ offer: SessionDescription) throws(Refusal) {
        var secure: String?
        var chosen: (index: Int, codec: Codec, event: UInt8?, crypto: SDESCrypto?)?
        var offeredCodecs: [String] = []
        for (index, section) in offer.media.enumerated() where section.type == "audio" && section.port != 0 {
            var crypto: SDESCrypto?
            switch section.proto {
            case "RTP/AVP", "RTP/AVPF": break
            case "RTP/SAVP", "RTP/SAVPF":
                // SDES: a key Parley can use, or the section is not one it can answer.
                guard let line = SDESCrypto.first(in: section) else {
                    secure = section.proto
                    continue
                }
                crypto = line
            default:
                secure = section.proto
                continue
            }
            let maps = section.rtpMaps
            var event: UInt8?
            var codec: Codec?
            for payloadType in section.payloadTypes {
                // Static types need no rtpmap (RFC 3551 section 6): 0 is PCMU, 8 PCMA.
                let map = maps.first { $0.payloadType == payloadType }
                let name = map?.encoding.uppercased() ?? (payloadType == 0 ? "PCMU" : payloadType == 8 ? "PCMA" : "\(payloadType)")
                let rate = map?.clockRate ?? 8000
                if name == "TELEPHONE-EVENT", rate == 8000 { event = event ?? payloadType; continue }
                offeredCodecs.append(map.map { "\($0.encoding)/\($0.clockRate)" } ?? name)
                guard codec == nil, rate == 8000 else { continue }
                if name == "PCMU" { codec = .pcmu } else if name == "PCMA" { codec = .pcma }
            }
            if let codec { chosen = (index, codec, event, crypto); break }
        }
        guard let chosen else {
            if let secure { throw .secure(secure) }
            throw offeredCodecs.isEmpty && !offer.media.contains(where: { $0.type == "audio" }) ? .noAudio : .noCommonCodec(offered: offeredCodecs)
        }
        let section = offer.media[chosen.index]
        guard let connection = offer.connection(of: section) else { throw .noAddress }
        index = chosen.index
        codec = chosen.codec
        telephoneEvent = chosen.event
        address = connection.address
        port = section.port
        direction = offer.direction(of: section)
        ptime = section.attribute("ptime")?.value.flatMap { Int($0) }
        crypto = chosen.crypto
    }

    /// The caller asked to hold the call (RFC 3264 section 8.4): it sends nothing, or wants nothing sent.
    package var isHold: Bool { direction == .sendonly || direction == .inactive || address == "0.0.0.0" }

    /// The answer: `address` and `port` where Parley receives this call's RTP; the offer's other
    /// sections declined with port 0, as RFC 3264 section 6 asks (an answer has as many sections
    /// as its offer). `version` is the o= line's, bumped for each new answer in the dialog.
    /// `crypto`: our key, for an offer with one (RTP/SAVP), under the offer's tag.
    package func answer(to offer: SessionDescription, address: String, port: UInt16, sessionID: UInt64, version: UInt64,
                        crypto: SDESCrypto? = nil) -> SessionDescription {
        let connection = SDPConnection(address: address)
        var media: [MediaDescription] = []
        for (index, section) in offer.media.enumerated() {
            guard index == self.index else {
                media.append(MediaDescription(type: section.type, port: 0, proto: section.proto, formats: section.formats))
                continue
            }
            var formats = [String(codec.payloadType)]
            var attributes = [SDPAttribute("rtpmap", "\(codec.payloadType) \(codec.encoding)/8000")]
            if let telephoneEvent {
                formats.append(String(telephoneEvent))
                attributes.append(SDPAttribute("rtpmap", "\(telephoneEvent) telephone-event/8000"))
                attributes.append(SDPAttribute("fmtp", "\(telephoneEvent) 0-15"))
            }
            attributes.append(SDPAttribute("ptime", "20"))
            attributes.append(SDPAttribute(direction.reversed.rawValue))
            if let crypto, let theirs = self.crypto, let ours = SDESCrypto(tag: theirs.tag, keyAndSalt: crypto.keyAndSalt) {
                attributes.append(SDPAttribute("crypto", ours.attribute))
            }
            media.append(MediaDescription(type: "audio", port: port, proto: self.crypto == nil ? "RTP/AVP" : "RTP/SAVP", formats: formats, attributes: attributes))
        }
        let lines = [SDPLine("v", "0"), SDPLine("o", "parley \(sessionID) \(version) IN \(connection.addressType) \(address)"),
                     SDPLine("s", "parley"), SDPLine("c", "IN \(connection.addressType) \(address)"), SDPLine("t", "0 0")]
        return SessionDescription(lines: lines, media: media)
    }
}
