/// The typed readings of the headers Parley acts on (RFC 3261 section 20), each throwing
/// `.malformedHeader(name)` on a value that does not follow its grammar.
package struct SIPCSeq: Sendable, Equatable, Hashable, CustomStringConvertible {
    package var number: UInt32
    package var method: String

    package init(_ number: UInt32, _ method: String) {
        self.number = number
        self.method = method
    }

    package var description: String { "\(number) \(method)" }
}

/// A Content-Type (section 20.15): type, subtype and parameters, type and subtype in lower case.
package struct SIPMediaType: Sendable, Equatable, Hashable {
    package var type: String
    package var subtype: String
    package var parameters: [SIPParameter]

    package var isSDP: Bool { type == "application" && subtype == "sdp" }
}

/// Session-Expires (RFC 4028 section 4): the interval and who refreshes.
package struct SIPSessionExpires: Sendable, Equatable, Hashable {
    package enum Refresher: String, Sendable { case uac, uas }
    package var seconds: UInt32
    package var refresher: Refresher?
}

extension SIPMessage {
    /// Every Via hop, topmost first.
    package func vias() throws(SIPParseError) -> [SIPVia] {
        var hops: [SIPVia] = []
        for value in values("Via") {
            guard let via = SIPVia(value) else { throw .malformedHeader("Via") }
            hops.append(via)
        }
        return hops
    }

    package func topVia() throws(SIPParseError) -> SIPVia {
        guard let value = value("Via") else { throw .missingHeader("Via") }
        guard let via = SIPVia(value) else { throw .malformedHeader("Via") }
        return via
    }

    package func from() throws(SIPParseError) -> SIPNameAddress { try nameAddress("From") }

    package func to() throws(SIPParseError) -> SIPNameAddress { try nameAddress("To") }

    private func nameAddress(_ name: String) throws(SIPParseError) -> SIPNameAddress {
        guard let value = value(name) else { throw .missingHeader(name) }
        guard let address = SIPNameAddress(value) else { throw .malformedHeader(name) }
        return address
    }

    /// callid = word [ "@" word ]: opaque, compared byte for byte (section 20.8).
    package func callID() throws(SIPParseError) -> String {
        guard let value = value("Call-ID") else { throw .missingHeader("Call-ID") }
        guard !value.isEmpty, !value.utf8.contains(where: { $0 == 0x20 || $0 == 0x09 || $0 < 0x20 }) else { throw .malformedHeader("Call-ID") }
        return value
    }

    /// CSeq = 1*DIGIT LWS Method, the number below 2^31 (section 8.1.1.5; RFC 4475 section 3.1.2.4).
    package func cseq() throws(SIPParseError) -> SIPCSeq {
        guard let value = value("CSeq") else { throw .missingHeader("CSeq") }
        var scanner = SIPScanner(value)
        let digits = scanner.take(while: SIPGrammar.isDigit)
        scanner.skipWhitespace()
        guard let number = SIPGrammar.number(digits, maximum: 0x7FFF_FFFF), scanner.index > digits.utf8.count,
              let method = scanner.token(), scanner.atEnd else { throw .malformedHeader("CSeq") }
        return SIPCSeq(UInt32(number), method)
    }

    /// Max-Forwards, 0 to 255 (section 20.22); nil when absent.
    package func maxForwards() throws(SIPParseError) -> Int? {
        guard let value = value("Max-Forwards") else { return nil }
        guard let number = SIPGrammar.number(value, maximum: 255) else { throw .malformedHeader("Max-Forwards") }
        return Int(number)
    }

    /// The Contact values; `*` (a REGISTER's "remove all", section 10.2.2) is left out.
    package func contacts() throws(SIPParseError) -> [SIPNameAddress] {
        try nameAddresses("Contact")
    }

    package func routes() throws(SIPParseError) -> [SIPNameAddress] { try nameAddresses("Route") }

    package func recordRoutes() throws(SIPParseError) -> [SIPNameAddress] { try nameAddresses("Record-Route") }

    private func nameAddresses(_ name: String) throws(SIPParseError) -> [SIPNameAddress] {
        var addresses: [SIPNameAddress] = []
        for value in values(name) where !(name == "Contact" && value == "*") {
            guard let address = SIPNameAddress(value) else { throw .malformedHeader(name) }
            addresses.append(address)
        }
        return addresses
    }

    /// The body's length: what Content-Length is written as.
    package var contentLength: Int { body.count }

    /// media-type = m-type SLASH m-subtype *( SEMI m-parameter ); nil when absent.
    package func contentType() throws(SIPParseError) -> SIPMediaType? {
        guard let value = value("Content-Type") else { return nil }
        var scanner = SIPScanner(value)
        guard let type = scanner.token(), scanner.separator(UInt8(ascii: "/")), let subtype = scanner.token(),
              let parameters = scanner.genericParameters() else { throw .malformedHeader("Content-Type") }
        scanner.skipWhitespace()
        guard scanner.atEnd else { throw .malformedHeader("Content-Type") }
        return SIPMediaType(type: type.lowercased(), subtype: subtype.lowercased(), parameters: parameters)
    }

    /// Allow's methods (section 20.5).
    package func allow() -> [String] { tokens("Allow") }

    /// Supported's option tags (section 20.37).
    package func supported() -> [String] { tokens("Supported") }

    /// Require's option tags (section 20.32).
    package func require() -> [String] { tokens("Require") }

    private func tokens(_ name: String) -> [String] { values(name).filter { !$0.isEmpty } }

    /// Session-Expires = delta-seconds *( SEMI se-params ) (RFC 4028 section 4); nil when absent.
    package func sessionExpires() throws(SIPParseError) -> SIPSessionExpires? {
        guard let value = value("Session-Expires") else { return nil }
        var scanner = SIPScanner(value)
        let digits = scanner.take(while: SIPGrammar.isDigit)
        guard let seconds = SIPGrammar.number(digits, maximum: UInt64(UInt32.max)), let parameters = scanner.genericParameters() else {
            throw .malformedHeader("Session-Expires")
        }
        scanner.skipWhitespace()
        guard scanner.atEnd else { throw .malformedHeader("Session-Expires") }
        var refresher: SIPSessionExpires.Refresher?
        if let name = parameters.value("refresher") {
            guard let known = SIPSessionExpires.Refresher(rawValue: name.lowercased()) else { throw .malformedHeader("Session-Expires") }
            refresher = known
        }
        return SIPSessionExpires(seconds: UInt32(seconds), refresher: refresher)
    }
}
