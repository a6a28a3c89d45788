/// One Via hop (RFC 3261 section 20.42): `SIP/2.0/<transport> <host>[:<port>]` and its parameters,
/// of which the transaction layer reads `branch` (section 17.2.3) and the transport `received` and
/// `rport` (section 18.2.1, RFC 3581).
package struct SIPVia: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The transport token in upper case: UDP, TCP, TLS, SCTP, WS, WSS, or one Parley does not know
    /// (RFC 4475 section 3.1.1.10).
    package var transport: String
    package var host: String
    package var port: UInt16?
    package var parameters: [SIPParameter]

    /// The magic cookie that marks an RFC 3261 branch (section 8.1.1.7).
    package static let magicCookie = "z9hG4bK"

    package init(transport: String, host: String, port: UInt16? = nil, parameters: [SIPParameter] = []) {
        self.transport = transport.uppercased()
        self.host = host
        self.port = port
        self.parameters = parameters
    }

    package var branch: String? {
        get { parameters.value("branch") }
        set { setParameter("branch", newValue) }
    }

    /// The source address the server saw, when it differs from `host` or rport asked for it.
    package var received: String? {
        get { parameters.value("received") }
        set { setParameter("received", newValue) }
    }

    /// `rport`'s state: absent (nil), asked for (the parameter without a value, `.some(nil)`), or
    /// filled in with the source port (RFC 3581 section 4).
    package var rport: UInt16?? {
        guard let value = parameters.value("rport") else { return nil }
        return .some(value.isEmpty ? nil : SIPGrammar.number(value, maximum: 65535).map { UInt16($0) })
    }

    private mutating func setParameter(_ name: String, _ value: String?) {
        if let value { parameters.set(name, value) } else { parameters.removeAll { $0.name.lowercased() == name } }
    }

    /// sent-protocol LWS sent-by *( SEMI via-params ), with the white space section 25.1 allows
    /// around each '/', ':' and ';' (RFC 4475 section 3.1.1.1). Only SIP/2.0 (section 3.1.2.16).
    package init?(_ text: String) {
        var scanner = SIPScanner(text)
        scanner.skipWhitespace()
        guard let name = scanner.token(), name.uppercased() == "SIP", scanner.separator(UInt8(ascii: "/")),
              let version = scanner.token(), version == "2.0", scanner.separator(UInt8(ascii: "/")),
              let transport = scanner.token() else { return nil }
        scanner.skipWhitespace()
        let host: String
        if scanner.peek() == UInt8(ascii: "[") {
            host = scanner.take { $0 != UInt8(ascii: "]") } + "]"
            guard scanner.peek() == UInt8(ascii: "]") else { return nil }
            scanner.index += 1
        } else {
            host = scanner.take { SIPGrammar.isTokenByte($0) }
        }
        var port: UInt16?
        if scanner.separator(UInt8(ascii: ":")) {
            guard let digits = scanner.token(), let value = SIPGrammar.number(digits, maximum: 65535) else { return nil }
            port = UInt16(value)
        }
        guard let (checkedHost, _) = SIPURI.hostAndPort(Array(host.utf8)), let parameters = scanner.genericParameters() else { return nil }
        scanner.skipWhitespace()
        guard scanner.atEnd else { return nil }
        for parameter in parameters where parameter.name.lowercased() == "rport" {
            if let value = parameter.value, SIPGrammar.number(value, maximum: 65535) == nil { return nil }
        }
        self.init(transport: transport, host: checkedHost, port: port, parameters: parameters)
    }

    package var description: String {
        "SIP/2.0/\(transport) \(host)" + (port.map { ":\($0)" } ?? "") + parameters.text
    }

    /// Whether the branch is RFC 3261's (the cookie and something after it): only those identify
    /// a transaction by themselves (section 17.2.3; RFC 4475 section 3.2.1 has one without).
    package var hasTransactionBranch: Bool {
        guard let branch else { return false }
        return branch.hasPrefix(Self.magicCookie) && branch.utf8.count > Self.magicCookie.utf8.count
    }
}
