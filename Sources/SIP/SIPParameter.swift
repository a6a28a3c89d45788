/// One `;name[=value]` of a URI or a header (RFC 3261 section 25.1: uri-parameter, generic-param),
/// the value as written (a quoted-string keeps its quotes), so that it writes back as it came.
package struct SIPParameter: Sendable, Equatable, Hashable {
    package var name: String
    package var value: String?

    package init(_ name: String, _ value: String? = nil) {
        self.name = name
        self.value = value
    }

    package var text: String { value.map { "\(name)=\($0)" } ?? name }
}

extension [SIPParameter] {
    /// The first parameter named `name` (case-insensitive, section 19.1.4 and 20): its value, or
    /// "" when it has none; nil when absent.
    package func value(_ name: String) -> String? {
        first { $0.name.lowercased() == name.lowercased() }.map { $0.value ?? "" }
    }

    package func contains(_ name: String) -> Bool { value(name) != nil }

    /// Sets `name` to `value`, in place if present, else at the end.
    package mutating func set(_ name: String, _ value: String?) {
        if let i = firstIndex(where: { $0.name.lowercased() == name.lowercased() }) { self[i].value = value } else { append(SIPParameter(name, value)) }
    }

    /// `;a=b;c` as a header writes them.
    package var text: String { map { ";" + $0.text }.joined() }
}

extension SIPScanner {
    /// *( SEMI generic-param ) to the end of the value, or up to a byte that cannot continue it:
    /// gen-value = token / host / quoted-string (section 25.1). nil when one is malformed (an
    /// empty name: RFC 4475 section 3.1.2.1).
    mutating func genericParameters() -> [SIPParameter]? {
        var parameters: [SIPParameter] = []
        while separator(UInt8(ascii: ";")) {
            guard let name = token() else { return nil }
            if separator(UInt8(ascii: "=")) {
                if let quoted = quotedString() {
                    parameters.append(SIPParameter(name, quoted))
                } else {
                    let value = take { SIPGrammar.isTokenByte($0) || $0 == UInt8(ascii: "[") || $0 == UInt8(ascii: "]") || $0 == UInt8(ascii: ":") }
                    guard !value.isEmpty else { return nil }
                    parameters.append(SIPParameter(name, value))
                }
            } else {
                parameters.append(SIPParameter(name))
            }
        }
        return parameters
    }
}
