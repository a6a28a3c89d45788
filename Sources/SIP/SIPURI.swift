/// A URI as SIP carries it (RFC 3261 section 19.1; RFC 3966 for tel:): sip: and sips: split into
/// user, password, host, port, parameters and headers; tel: into its number and parameters; any
/// other scheme kept whole (RFC 4475 section 3.3.11: such a request is answered 416, so it must
/// parse). Escapes are kept as written, so a URI writes back byte for byte.
package struct SIPURI: Sendable, Equatable, Hashable, CustomStringConvertible {
    package enum Scheme: Sendable, Equatable, Hashable {
        case sip, sips, tel
        case other(String)

        package var name: String {
            switch self {
            case .sip: "sip"
            case .sips: "sips"
            case .tel: "tel"
            case .other(let name): name
            }
        }
    }

    package var scheme: Scheme
    /// The user part (sip:, sips:), the number (tel:), or everything after the colon (others).
    package var user: String?
    package var password: String?
    /// The host as written, an IPv6 reference with its brackets; empty for tel: and others.
    package var host: String
    package var port: UInt16?
    package var parameters: [SIPParameter]
    package var headers: [SIPParameter]

    package init(scheme: Scheme = .sip, user: String? = nil, password: String? = nil, host: String, port: UInt16? = nil,
                 parameters: [SIPParameter] = [], headers: [SIPParameter] = []) {
        self.scheme = scheme
        self.user = user
        self.password = password
        self.host = host
        self.port = port
        self.parameters = parameters
        self.headers = headers
    }

    /// Parses a whole URI; nil when it is not one. No white space, `<`, `>` or `"` may appear in
    /// it (RFC 4475 sections 3.1.2.7, 3.1.2.14).
    package init?(_ text: some StringProtocol) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") || $0 == UInt8(ascii: "\"") }),
              let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return nil }
        // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
        let schemeBytes = bytes[..<colon]
        guard let first = schemeBytes.first, Self.isAlpha(first),
              schemeBytes.allSatisfy({ Self.isAlpha($0) || SIPGrammar.isDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }) else { return nil }
        let schemeName = String(decoding: schemeBytes, as: UTF8.self).lowercased()
        let rest = Array(bytes[(colon + 1)...])
        switch schemeName {
        case "sip", "sips":
            guard let parsed = Self.parseSIP(rest) else { return nil }
            self = parsed
            scheme = schemeName == "sip" ? .sip : .sips
        case "tel":
            // telephone-subscriber *( ";" parameter ) (RFC 3966 section 3), no headers.
            let parts = rest.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
            guard let number = parts.first, !number.isEmpty, let parameters = Self.parameters(parts.dropFirst()) else { return nil }
            self.init(scheme: .tel, user: String(decoding: number, as: UTF8.self), host: "", parameters: parameters)
        default:
            guard !rest.isEmpty else { return nil }
            self.init(scheme: .other(schemeName), user: String(decoding: rest, as: UTF8.self), host: "")
        }
    }

    private static func isAlpha(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    /// [ userinfo "@" ] hostport uri-parameters [ headers ]. '@' appears nowhere in a SIP URI
    /// but after the userinfo (section 25.1: it is escaped elsewhere), so the first one ends it;
    /// the user part may hold ';', '?' and ',' (RFC 4475 sections 3.1.1.2, 3.1.1.9).
    private static func parseSIP(_ bytes: [UInt8]) -> SIPURI? {
        var remainder = bytes[...]
        var user: String?
        var password: String?
        if let at = bytes.firstIndex(of: UInt8(ascii: "@")) {
            let userinfo = bytes[..<at]
            if let colon = userinfo.firstIndex(of: UInt8(ascii: ":")) {
                user = String(decoding: userinfo[..<colon], as: UTF8.self)
                password = String(decoding: userinfo[(colon + 1)...], as: UTF8.self)
            } else {
                user = String(decoding: userinfo, as: UTF8.self)
            }
            guard user?.isEmpty == false else { return nil }
            remainder = bytes[(at + 1)...]
        }
        var headerBytes: ArraySlice<UInt8>?
        if let question = remainder.firstIndex(of: UInt8(ascii: "?")) {
            headerBytes = remainder[(question + 1)...]
            remainder = remainder[..<question]
        }
        let parts = remainder.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
        guard let hostport = parts.first, let (host, port) = hostAndPort(hostport), let parameters = parameters(parts.dropFirst()) else { return nil }
        var headers: [SIPParameter] = []
        if let headerBytes {
            for field in headerBytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false) {
                guard let equals = field.firstIndex(of: UInt8(ascii: "=")), equals > field.startIndex else { return nil }
                headers.append(SIPParameter(String(decoding: field[..<equals], as: UTF8.self), String(decoding: field[(equals + 1)...], as: UTF8.self)))
            }
        }
        return SIPURI(user: user, password: password, host: host, port: port, parameters: parameters, headers: headers)
    }

    /// host [ ":" port ]: a hostname or IPv4 address (alphanumerics, '-', '.', '_' as deployed
    /// names have them), or an IPv6 reference in brackets.
    static func hostAndPort(_ bytes: some Collection<UInt8>) -> (String, UInt16?)? {
        let bytes = Array(bytes)
        var hostEnd: Int
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")), close > 1,
                  bytes[1..<close].allSatisfy({ isHex($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { return nil }
            hostEnd = close + 1
        } else {
            hostEnd = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.count
            guard hostEnd > 0, bytes[..<hostEnd].allSatisfy({ isHex($0) || isAlpha($0) || SIPGrammar.isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") }) else { return nil }
        }
        let host = String(decoding: bytes[..<hostEnd], as: UTF8.self)
        guard hostEnd < bytes.count else { return (host, nil) }
        guard bytes[hostEnd] == UInt8(ascii: ":"), let port = SIPGrammar.number(String(decoding: bytes[(hostEnd + 1)...], as: UTF8.self), maximum: 65535) else { return nil }
        return (host, UInt16(port))
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        SIPGrammar.isDigit(byte) || ((byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "f"))
    }

    /// `;name[=value]` pieces of a URI; an empty name is malformed.
    private static func parameters(_ parts: some Sequence<ArraySlice<UInt8>>) -> [SIPParameter]? {
        var parameters: [SIPParameter] = []
        for part in parts {
            if let equals = part.firstIndex(of: UInt8(ascii: "=")) {
                guard equals > part.startIndex else { return nil }
                parameters.append(SIPParameter(String(decoding: part[..<equals], as: UTF8.self), String(decoding: part[(equals + 1)...], as: UTF8.self)))
            } else {
                guard !part.isEmpty else { return nil }
                parameters.append(SIPParameter(String(decoding: part, as: UTF8.self)))
            }
        }
        return parameters
    }

    /// The URI as text: what parsed writes back the same, the scheme in lower case.
    package var description: String {
        var text = scheme.name + ":"
        switch scheme {
        case .sip, .sips:
            if let user {
                text += user
                if let password { text += ":" + password }
                text += "@"
            }
            text += host
            if let port { text += ":\(port)" }
        case .tel, .other:
            text += user ?? ""
        }
        text += parameters.map { ";" + $0.text }.joined()
        if !headers.isEmpty { text += "?" + headers.map(\.text).joined(separator: "&") }
        return text
    }

    /// Whether the URI's `lr` parameter is present: a loose router (section 16.12.1.1).
    package var isLooseRouter: Bool { parameters.contains("lr") }
}
