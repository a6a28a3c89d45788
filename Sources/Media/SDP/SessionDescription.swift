/// A session description (RFC 8866): the session part (v=, o=, s=, t=, ..., its attributes), then
/// its media sections. Parsed from untrusted text with bounds on everything it allocates, and kept
/// whole: every line and attribute in order, so that it serialises back to the same description
/// (with CRLF line endings, RFC 8866 section 5) and a caller can read any attribute it needs.
///
/// The session part's non-attribute lines are written back in the order they came, then its
/// attributes; likewise in each media section. RFC 8866 section 5 fixes that order (a= last), so
/// a well-formed description round-trips byte for byte.
package struct SessionDescription: Equatable, Sendable {
    /// RFC 8866 puts no bound on a description; Parley's: a browser's offer with audio, video and a
    /// data channel and a dozen candidates is 6-8 KB, so 64 KiB leaves room without inviting abuse.
    package static let maxBytes = 65_536
    package static let maxLineBytes = 4_096
    package static let maxMediaSections = 64

    /// The session part's lines other than a=, in order; the first is v=0.
    package var lines: [SDPLine]
    package var attributes: [SDPAttribute]
    package var media: [MediaDescription]

    package init(lines: [SDPLine], attributes: [SDPAttribute] = [], media: [MediaDescription] = []) {
        self.lines = lines
        self.attributes = attributes
        self.media = media
    }

    package init(parsing text: String) throws(SDPError) {
        try self.init(parsing: Array(text.utf8))
    }

    /// Reads a description. Lines end in CRLF or a bare LF (RFC 8866 section 5 asks for CRLF but
    /// tells parsers to accept LF); empty lines are skipped.
    package init(parsing bytes: [UInt8]) throws(SDPError) {
        guard bytes.count <= Self.maxBytes else { throw .tooLarge(bytes: bytes.count, limit: Self.maxBytes) }
        var sessionLines: [SDPLine] = []
        var sessionAttributes: [SDPAttribute] = []
        var media: [MediaDescription] = []
        var lineNumber = 0
        var start = 0
        while start < bytes.count {
            lineNumber += 1
            var end = start
            while end < bytes.count && bytes[end] != 0x0A { end += 1 }
            let next = end + 1
            if end > start && bytes[end - 1] == 0x0D { end -= 1 }
            defer { start = next }
            if end == start { continue }
            guard end - start <= Self.maxLineBytes else { throw .lineTooLong(line: lineNumber, limit: Self.maxLineBytes) }

            let type = bytes[start]
            guard end - start >= 2, (0x61...0x7A).contains(type), bytes[start + 1] == 0x3D else { throw .malformedLine(line: lineNumber) }
            // RFC 8866 section 9: a value is any byte but NUL, CR and LF.
            for index in (start + 2)..<end where bytes[index] == 0 || bytes[index] == 0x0D {
                throw .malformedLine(line: lineNumber)
            }
            guard let value = String(validating: bytes[(start + 2)..<end], as: UTF8.self) else { throw .invalidUTF8(line: lineNumber) }

            if sessionLines.isEmpty {
                guard type == 0x76, value == "0" else { throw .missingVersion(line: lineNumber) }
            }
            switch type {
            case 0x6D:  // m=
                guard media.count < Self.maxMediaSections else { throw .tooManyMediaSections(limit: Self.maxMediaSections) }
                if media.isEmpty { try Self.checkSessionFields(sessionLines) }
                guard let section = MediaDescription(mediaLine: value[...]) else { throw .malformedMediaLine(line: lineNumber) }
                media.append(section)
            case 0x61:  // a=
                let attribute = try Self.attribute(value, line: lineNumber)
                if media.isEmpty { sessionAttributes.append(attribute) } else { media[media.count - 1].attributes.append(attribute) }
            default:
                let line = SDPLine(Character(Unicode.Scalar(type)), value)
                if media.isEmpty { sessionLines.append(line) } else { media[media.count - 1].lines.append(line) }
            }
        }
        if sessionLines.isEmpty { throw .missingVersion(line: max(1, lineNumber)) }
        if media.isEmpty { try Self.checkSessionFields(sessionLines) }
        self.init(lines: sessionLines, attributes: sessionAttributes, media: media)
    }

    private static func checkSessionFields(_ lines: [SDPLine]) throws(SDPError) {
        for field: Character in ["o", "s", "t"] where !lines.contains(where: { $0.type == field }) {
            throw .missingField(String(field))
        }
    }

    private static func attribute(_ text: String, line: Int) throws(SDPError) -> SDPAttribute {
        guard let colon = text.firstIndex(of: ":") else {
            guard !text.isEmpty else { throw .malformedAttribute(line: line) }
            return SDPAttribute(text)
        }
        guard colon != text.startIndex else { throw .malformedAttribute(line: line) }
        return SDPAttribute(String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    /// The description as text, each line ended by CRLF.
    package var text: String {
        var text = ""
        for line in lines { text += String(line.type) + "=" + line.value + "\r\n" }
        for attribute in attributes { text += "a=" + attribute.text + "\r\n" }
        for section in media {
            text += "m=" + section.mediaLine + "\r\n"
            for line in section.lines { text += String(line.type) + "=" + line.value + "\r\n" }
            for attribute in section.attributes { text += "a=" + attribute.text + "\r\n" }
        }
        return text
    }

    /// The description as UTF-8 bytes, as an `application/sdp` body carries it.
    package var bytes: [UInt8] { Array(text.utf8) }
}
