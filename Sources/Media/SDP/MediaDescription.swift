/// One media section: its m= line, then the lines and attributes up to the next m= line
/// (RFC 8866 section 5.14). Every attribute is kept, in order; the typed accessors
/// (SDPAttributeValues.swift) read the ones offer and answer need.
package struct MediaDescription: Equatable, Sendable {
    /// "audio", "video", "application", ...
    package var type: String
    /// 0 marks a rejected or bundle-only section (RFC 8843 section 6).
    package var port: UInt16
    /// The `/<number of ports>` of the m= line, if written (RTP over several ports; never in WebRTC).
    package var portCount: UInt16?
    /// "UDP/TLS/RTP/SAVPF", "UDP/DTLS/SCTP", "RTP/AVP", ...
    package var proto: String
    /// RTP payload type numbers as written, or "webrtc-datachannel" for a data channel.
    package var formats: [String]
    /// The section's c=, b=, i= and k= lines, in order.
    package var lines: [SDPLine]
    package var attributes: [SDPAttribute]

    package init(type: String, port: UInt16, portCount: UInt16? = nil, proto: String, formats: [String], lines: [SDPLine] = [], attributes: [SDPAttribute] = []) {
        self.type = type
        self.port = port
        self.portCount = portCount
        self.proto = proto
        self.formats = formats
        self.lines = lines
        self.attributes = attributes
    }

    /// The m= line's value: `<media> <port>[/<count>] <proto> <fmt> ...`.
    package var mediaLine: String {
        var text = type + " " + String(port)
        if let portCount { text += "/" + String(portCount) }
        text += " " + proto
        for format in formats { text += " " + format }
        return text
    }

    /// Reads an m= line's value; nil if it is not one. RFC 8866 section 5.14 separates the fields
    /// with single spaces; runs of spaces are tolerated here and written back single.
    init?(mediaLine value: Substring) {
        let fields = value.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 4 else { return nil }
        let portField = fields[1]
        if let slash = portField.firstIndex(of: "/") {
            guard let port = UInt16(portField[..<slash]), let count = UInt16(portField[portField.index(after: slash)...]) else { return nil }
            (self.port, self.portCount) = (port, count)
        } else {
            guard let port = UInt16(portField) else { return nil }
            (self.port, self.portCount) = (port, nil)
        }
        type = String(fields[0])
        proto = String(fields[2])
        formats = fields[3...].map(String.init)
        lines = []
        attributes = []
    }
}
