/// Reads SIP messages from bytes (RFC 3261 sections 7 and 18.3): one from a datagram, where
/// Content-Length may be absent, or the head of one from a stream (`SIPStreamFramer`). Every
/// message it returns has passed `validate()`, so the headers the transaction layer and the
/// dialogs rely on parse.
package enum SIPMessageParser {
    /// The largest header section read, start line to the empty line.
    package static let maxHeaderBytes = 16 * 1024
    /// The largest body read.
    package static let maxBodyBytes = 64 * 1024
    /// The largest Content-Length taken as a number (2^31 - 1, like CSeq's bound).
    static let maxContentLength: UInt64 = 0x7FFF_FFFF

    /// A message's start line and header fields, and its Content-Length when it has one.
    struct Head {
        var startLine: SIPMessage.StartLine
        var headers: [SIPHeader]
        var contentLength: Int?
    }

    /// One message from one datagram. Bytes past Content-Length are discarded; without it the
    /// body is the rest of the datagram (section 18.3). CRLFs before the start line are skipped.
    package static func parse(datagram bytes: [UInt8]) throws(SIPParseError) -> SIPMessage {
        var start = 0
        while start + 1 < bytes.count, bytes[start] == 0x0D, bytes[start + 1] == 0x0A { start += 2 }
        guard start < bytes.count else { throw .empty }
        guard let end = headEnd(bytes, from: start, limit: maxHeaderBytes) else {
            throw bytes.count - start > maxHeaderBytes ? .headerSectionTooLarge(limit: maxHeaderBytes) : .incompleteHeaderSection
        }
        let head = try parseHead(bytes[start..<end])
        let available = bytes.count - (end + 4)
        let body: ArraySlice<UInt8>
        if let length = head.contentLength {
            guard length <= available else { throw .bodyTruncated(contentLength: length, available: available) }
            body = bytes[(end + 4)..<(end + 4 + length)]
        } else {
            body = bytes[(end + 4)...]
        }
        guard body.count <= maxBodyBytes else { throw .bodyTooLarge(limit: maxBodyBytes) }
        let message = SIPMessage(head.startLine, headers: head.headers, body: Array(body))
        try message.validate()
        return message
    }

    package static func parse(datagram buffer: UnsafeRawBufferPointer) throws(SIPParseError) -> SIPMessage {
        try parse(datagram: Array(buffer))
    }

    /// Where the header section's closing CRLFCRLF starts, searching from `from` (and not past
    /// `limit` bytes after `start`); nil if not there.
    static func headEnd(_ bytes: [UInt8], from: Int, limit: Int, start: Int? = nil) -> Int? {
        let origin = start ?? from
        let last = min(bytes.count - 4, origin + limit)
        var i = max(from, origin)
        while i <= last {
            if bytes[i] == 0x0D, bytes[i + 1] == 0x0A, bytes[i + 2] == 0x0D, bytes[i + 3] == 0x0A { return i }
            i += 1
        }
        return nil
    }

    /// The start line and the header fields of `bytes`: the header section without its closing
    /// empty line. Folds are joined (section 7.3.1), compact names expanded, list headers split.
    static func parseHead(_ bytes: ArraySlice<UInt8>) throws(SIPParseError) -> Head {
        guard String(validating: bytes, as: UTF8.self) != nil else { throw .invalidUTF8 }
        let lines = try splitLines(bytes)
        guard let first = lines.first else { throw .malformedRequestLine }
        let startLine = try parseStartLine(first)
        var fields: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            if let lead = line.first, lead == 0x20 || lead == 0x09 {
                guard !fields.isEmpty else { throw .malformedHeaderLine }
                let last = fields.count - 1
                fields[last].value = trimmed(fields[last].value, leading: false) + " " + SIPHeaderName.trim(line)
                continue
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw .malformedHeaderLine }
            let name = SIPHeaderName.trim(line[line.startIndex..<colon])
            guard SIPGrammar.isToken(name) else { throw .malformedHeaderLine }
            fields.append((name, String(decoding: line[(colon + 1)...], as: UTF8.self)))
        }
        var headers: [SIPHeader] = []
        headers.reserveCapacity(fields.count)
        var contentLength: Int?
        for field in fields {
            let name = SIPHeaderName.canonical(field.name)
            let value = trimmed(trimmed(field.value, leading: true), leading: false)
            if name == "Content-Length" {
                guard let length = SIPGrammar.number(value, maximum: maxContentLength), contentLength == nil || contentLength == Int(length) else {
                    throw .malformedHeader("Content-Length")
                }
                contentLength = Int(length)
            } else if SIPHeaderName.lists.contains(name) {
                for element in SIPHeaderName.splitList(value) { headers.append(SIPHeader(name, element)) }
            } else {
                headers.append(SIPHeader(name, value))
            }
        }
        return Head(startLine: startLine, headers: headers, contentLength: contentLength)
    }

    /// Lines split on CRLF; a CR or LF alone anywhere is malformed.
    private static func splitLines(_ bytes: ArraySlice<UInt8>) throws(SIPParseError) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let byte = bytes[i]
            if byte == 0x0D {
                guard i + 1 < bytes.endIndex, bytes[i + 1] == 0x0A else { throw .malformedHeaderLine }
                lines.append(bytes[start..<i])
                i += 2
                start = i
            } else if byte == 0x0A {
                throw .malformedHeaderLine
            } else {
                i += 1
            }
        }
        lines.append(bytes[start..<bytes.endIndex])
        return lines
    }

    /// Trimmed by scalar, not by Character: a combining mark after a space makes one Character
    /// of the two, so a value written as "Name: \u{360}x" would read back with its space kept
    /// (found by the sip fuzz target, Fuzz/corpus/sip/combining-mark-after-colon).
    private static func trimmed(_ text: String, leading: Bool) -> String {
        var scalars = Substring(text).unicodeScalars
        if leading {
            while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
        } else {
            while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
        }
        return String(scalars)
    }

    /// Request-Line = Method SP Request-URI SP SIP-Version, single spaces and nothing after
    /// (RFC 4475 sections 3.1.2.7 to 3.1.2.10); Status-Line = SIP-Version SP 3DIGIT SP
    /// Reason-Phrase, the reason possibly empty (section 3.1.1.13) and any UTF-8 (section 3.1.1.12).
    private static func parseStartLine(_ line: ArraySlice<UInt8>) throws(SIPParseError) -> SIPMessage.StartLine {
        let parts = line.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: false)
        if line.count >= 4, String(decoding: line.prefix(4), as: UTF8.self).uppercased() == "SIP/" {
            guard isVersion20(parts[0]) else { throw looksLikeVersion(parts[0]) ? .unsupportedVersion : .malformedStatusLine }
            guard parts.count >= 2, parts[1].count == 3, let code = SIPGrammar.number(String(decoding: parts[1], as: UTF8.self), maximum: 699), code >= 100 else {
                throw .malformedStatusLine
            }
            return .response(status: Int(code), reason: parts.count == 3 ? String(decoding: parts[2], as: UTF8.self) : "")
        }
        let all = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard all.count == 3 else { throw .malformedRequestLine }
        let method = String(decoding: all[0], as: UTF8.self)
        guard SIPGrammar.isToken(method) else { throw .malformedRequestLine }
        guard isVersion20(all[2]) else { throw looksLikeVersion(all[2]) ? .unsupportedVersion : .malformedRequestLine }
        guard let uri = SIPURI(String(decoding: all[1], as: UTF8.self)) else { throw .malformedRequestURI }
        if uri.scheme == .sip || uri.scheme == .sips, !uri.headers.isEmpty { throw .malformedRequestURI }
        return .request(method: method, uri: uri)
    }

    private static func isVersion20(_ text: ArraySlice<UInt8>) -> Bool {
        String(decoding: text, as: UTF8.self).uppercased() == "SIP/2.0"
    }

    /// "SIP/" 1*DIGIT "." 1*DIGIT (section 25.1: SIP-Version).
    private static func looksLikeVersion(_ text: ArraySlice<UInt8>) -> Bool {
        let string = String(decoding: text, as: UTF8.self).uppercased()
        guard string.hasPrefix("SIP/") else { return false }
        let numbers = string.dropFirst(4).split(separator: ".", omittingEmptySubsequences: false)
        return numbers.count == 2 && numbers.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy(SIPGrammar.isDigit) }
    }
}

extension SIPMessage {
    /// One message from one datagram (`SIPMessageParser.parse(datagram:)`).
    package init(datagram bytes: [UInt8]) throws(SIPParseError) {
        self = try SIPMessageParser.parse(datagram: bytes)
    }

    /// Checks the headers the transaction layer and dialogs read: Via, From, To, Call-ID and CSeq
    /// present (section 8.1.1) and well formed, CSeq's method the request's, and Max-Forwards,
    /// Contact, Route, Record-Route, Content-Type, Session-Expires and Date well formed when present.
    package func validate() throws(SIPParseError) {
        guard !values("Via").isEmpty else { throw .missingHeader("Via") }
        _ = try vias()
        for name in ["From", "To", "Call-ID", "CSeq"] {
            let count = values(name).count
            guard count > 0 else { throw .missingHeader(name) }
            guard count == 1 else { throw .malformedHeader(name) }
        }
        _ = try from()
        _ = try to()
        _ = try callID()
        let sequence = try cseq()
        if let method, sequence.method != method { throw .methodMismatch }
        _ = try maxForwards()
        _ = try contacts()
        _ = try routes()
        _ = try recordRoutes()
        _ = try contentType()
        _ = try sessionExpires()
        // rfc1123-date ends in "GMT" (section 20.17; RFC 4475 section 3.1.2.12 has "EST").
        for date in values("Date") where !date.hasSuffix(" GMT") { throw .malformedHeader("Date") }
    }
}
