/// Typed reads of the attributes offer and answer need. A media section's own accessors read only
/// its own lines; `SessionDescription`'s `…(of:)` forms add what the section inherits from the
/// session part where the attribute's RFC lets it be written there.
extension MediaDescription {
    package func attribute(_ name: String) -> SDPAttribute? { attributes.first(named: name) }

    /// `a=mid` (RFC 5888 section 4): the section's identification tag, what BUNDLE groups name.
    package var mid: String? { attributes.first(named: "mid")?.value }

    /// Every readable `a=rtpmap`, in order.
    package var rtpMaps: [SDPRTPMap] { attributes.values(named: "rtpmap").compactMap(SDPRTPMap.init) }

    package func rtpMap(payloadType: UInt8) -> SDPRTPMap? {
        rtpMaps.first { $0.payloadType == payloadType }
    }

    /// The parameters of `a=fmtp:<payload type> <parameters>` (RFC 8866 section 6.15), verbatim.
    package func formatParameters(payloadType: UInt8) -> String? {
        for value in attributes.values(named: "fmtp") {
            let parts = value.split(separator: " ", maxSplits: 1)
            if parts.count == 2, UInt8(parts[0]) == payloadType { return String(parts[1]) }
        }
        return nil
    }

    /// The section's payload types that are numbers below 128, in the m= line's order (the
    /// offerer's preference, RFC 3264 section 5.1).
    package var payloadTypes: [UInt8] {
        formats.compactMap { UInt8($0) }.filter { $0 < 128 }
    }

    /// `a=rtcp-mux` (RFC 5761 section 5.1.1): RTP and RTCP on one port.
    package var rtcpMux: Bool { attributes.contains(named: "rtcp-mux") }

    /// `a=bundle-only` (RFC 8843 section 6): a port-0 section to be used only if bundled.
    package var isBundleOnly: Bool { attributes.contains(named: "bundle-only") }

    /// The section's own direction attribute, if it has one.
    package var direction: SDPDirection? {
        for attribute in attributes where attribute.value == nil {
            if let direction = SDPDirection(rawValue: attribute.name) { return direction }
        }
        return nil
    }

    /// `a=sctp-port` (RFC 8841 section 5).
    package var sctpPort: UInt16? { attributes.first(named: "sctp-port")?.value.flatMap { UInt16($0) } }

    /// `a=max-message-size` (RFC 8841 section 6): 0 means no limit.
    package var maxMessageSize: UInt64? { attributes.first(named: "max-message-size")?.value.flatMap { UInt64($0) } }

    /// The `a=candidate` values, unread: an ICE-lite answerer learns the peer's address from its
    /// checks (RFC 8445 section 2.5), so only a full agent would need them parsed.
    package var candidates: [String] { attributes.values(named: "candidate") }

    package var ssrcAttributes: [SDPSSRCAttribute] { attributes.values(named: "ssrc").compactMap(SDPSSRCAttribute.init) }

    /// The distinct SSRCs `a=ssrc` names, in order of first mention.
    package var ssrcs: [UInt32] {
        var seen: [UInt32] = []
        for attribute in ssrcAttributes where !seen.contains(attribute.ssrc) { seen.append(attribute.ssrc) }
        return seen
    }

    /// The section's own c= line.
    package var connection: SDPConnection? {
        lines.first { $0.type == "c" }.flatMap { SDPConnection($0.value) }
    }

    package var iceUfrag: String? { attributes.first(named: "ice-ufrag")?.value }
    package var icePwd: String? { attributes.first(named: "ice-pwd")?.value }
    /// `a=ice-options` tokens (RFC 8839 section 5.6), "trickle" among them.
    package var iceOptions: [String]? {
        attributes.first(named: "ice-options")?.value.map { $0.split(separator: " ").map(String.init) }
    }
    /// The readable `a=fingerprint` lines; RFC 8122 section 5 allows several (aiortc offers
    /// sha-256, sha-384 and sha-512).
    package var fingerprints: [SDPFingerprint] { attributes.values(named: "fingerprint").compactMap(SDPFingerprint.init) }
    package var setup: SDPSetup? { attributes.first(named: "setup")?.value.flatMap(SDPSetup.init(rawValue:)) }
}

extension SessionDescription {
    package func attribute(_ name: String) -> SDPAttribute? { attributes.first(named: name) }

    package var origin: String? { lines.first { $0.type == "o" }?.value }
    package var sessionName: String? { lines.first { $0.type == "s" }?.value }

    /// The `a=group` lines (RFC 5888), readable ones only.
    package var groups: [SDPGroup] { attributes.values(named: "group").compactMap(SDPGroup.init) }

    /// The mids of the first BUNDLE group (RFC 8843 section 7); nil if there is none.
    package var bundle: [String]? { groups.first { $0.semantics == "BUNDLE" }?.mids }

    /// `a=ice-lite` (RFC 8839 section 5.3), a session-level attribute only.
    package var isICELite: Bool { attributes.contains(named: "ice-lite") }

    package var connection: SDPConnection? {
        lines.first { $0.type == "c" }.flatMap { SDPConnection($0.value) }
    }

    // What a section inherits. RFC 8839 section 5.4 lets ice-ufrag and ice-pwd, section 5.6
    // ice-options, RFC 8122 section 5 fingerprint, RFC 4145 section 4 setup, RFC 8866 section 6.7 the
    // direction and section 5.7 c= stand at session level, a section's own value overriding it.

    package func iceUfrag(of section: MediaDescription) -> String? {
        section.iceUfrag ?? attributes.first(named: "ice-ufrag")?.value
    }

    package func icePwd(of section: MediaDescription) -> String? {
        section.icePwd ?? attributes.first(named: "ice-pwd")?.value
    }

    package func iceOptions(of section: MediaDescription) -> [String] {
        section.iceOptions ?? attributes.first(named: "ice-options")?.value.map { $0.split(separator: " ").map(String.init) } ?? []
    }

    /// A section's fingerprints: its own if it has any, else the session's.
    package func fingerprints(of section: MediaDescription) -> [SDPFingerprint] {
        let own = section.fingerprints
        return own.isEmpty ? attributes.values(named: "fingerprint").compactMap(SDPFingerprint.init) : own
    }

    package func setup(of section: MediaDescription) -> SDPSetup? {
        section.setup ?? attributes.first(named: "setup")?.value.flatMap(SDPSetup.init(rawValue:))
    }

    /// The section's direction; sendrecv when neither it nor the session says (RFC 8866 section 6.7).
    package func direction(of section: MediaDescription) -> SDPDirection {
        if let own = section.direction { return own }
        for attribute in attributes where attribute.value == nil {
            if let direction = SDPDirection(rawValue: attribute.name) { return direction }
        }
        return .sendrecv
    }

    package func connection(of section: MediaDescription) -> SDPConnection? {
        section.connection ?? connection
    }
}
