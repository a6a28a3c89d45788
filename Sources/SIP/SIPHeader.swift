/// One header field as the message holds it: the name in its canonical spelling when Parley knows
/// it (compact forms expanded, RFC 3261 section 7.3.3), else as received; the value with folds
/// joined into single spaces (section 7.3.1) and no white space at either end. A comma-separated
/// list header is held as one field per element, which section 7.3.1 makes equivalent.
package struct SIPHeader: Sendable, Equatable, Hashable {
    package var name: String
    package var value: String

    package init(_ name: String, _ value: String) {
        self.name = SIPHeaderName.canonical(name)
        self.value = value
    }
}

/// The header names Parley knows: their canonical spellings, compact forms, and which are
/// comma-separated lists.
enum SIPHeaderName {
    /// Compact forms: RFC 3261 section 7.3.3 and the registry's later ones (RFC 3515 r, RFC 3892 b,
    /// RFC 4028 x, RFC 6665 o and u, RFC 3841 a, j and d, RFC 4474 y and n).
    static let compact: [String: String] = [
        "i": "Call-ID", "m": "Contact", "e": "Content-Encoding", "l": "Content-Length", "c": "Content-Type",
        "f": "From", "s": "Subject", "k": "Supported", "t": "To", "v": "Via", "o": "Event", "u": "Allow-Events",
        "r": "Refer-To", "b": "Referred-By", "x": "Session-Expires", "a": "Accept-Contact", "j": "Reject-Contact",
        "d": "Request-Disposition", "y": "Identity", "n": "Identity-Info",
    ]

    static let known: [String] = [
        "Accept", "Accept-Contact", "Accept-Encoding", "Accept-Language", "Alert-Info", "Allow", "Allow-Events",
        "Authentication-Info", "Authorization", "Call-ID", "Call-Info", "Contact", "Content-Disposition",
        "Content-Encoding", "Content-Language", "Content-Length", "Content-Type", "CSeq", "Date", "Error-Info",
        "Event", "Expires", "From", "Identity", "Identity-Info", "In-Reply-To", "Max-Forwards", "Min-Expires", "Min-SE",
        "MIME-Version", "Organization", "P-Asserted-Identity", "Path", "Priority", "Privacy", "Proxy-Authenticate",
        "Proxy-Authorization", "Proxy-Require", "RAck", "Reason", "Record-Route", "Refer-To", "Referred-By",
        "Reject-Contact", "Replaces", "Reply-To", "Request-Disposition", "Require", "Retry-After", "Route", "RSeq",
        "Server", "Service-Route", "Session-Expires", "Subject", "Subscription-State", "Supported", "Timestamp", "To",
        "Unsupported", "User-Agent", "Via", "Warning", "WWW-Authenticate",
    ]

    private static let byLowercase: [String: String] = {
        var table: [String: String] = [:]
        for name in known { table[name.lowercased()] = name }
        for (short, long) in compact { table[short] = long }
        return table
    }()

    /// Headers whose value is a comma-separated list (section 7.3.1), split into one field per
    /// element. Not the authentication headers (their parameters are comma-separated), nor Date
    /// (its value holds a comma), nor any header Parley does not know (RFC 4475 section 3.1.1.1).
    static let lists: Set<String> = [
        "Accept", "Accept-Contact", "Accept-Encoding", "Accept-Language", "Alert-Info", "Allow", "Allow-Events",
        "Call-Info", "Contact", "Content-Encoding", "Content-Language", "Error-Info", "In-Reply-To", "P-Asserted-Identity",
        "Path", "Privacy", "Proxy-Require", "Record-Route", "Reject-Contact", "Request-Disposition", "Require", "Route",
        "Service-Route", "Supported", "Unsupported", "Via", "Warning",
    ]

    static func canonical(_ name: String) -> String { byLowercase[name.lowercased()] ?? name }

    /// Splits a list header's value on commas outside quoted strings and angle brackets, each
    /// element trimmed; empty elements dropped, but a value of none at all stays one empty field.
    static func splitList(_ value: String) -> [String] {
        let bytes = Array(value.utf8)
        var elements: [String] = []
        var start = 0
        var inQuotes = false
        var inBrackets = false
        var i = 0
        while i < bytes.count {
            let byte = bytes[i]
            if inQuotes {
                if byte == UInt8(ascii: "\\") { i += 1 } else if byte == UInt8(ascii: "\"") { inQuotes = false }
            } else if byte == UInt8(ascii: "\"") {
                inQuotes = true
            } else if byte == UInt8(ascii: "<") {
                inBrackets = true
            } else if byte == UInt8(ascii: ">") {
                inBrackets = false
            } else if byte == UInt8(ascii: ","), !inBrackets {
                elements.append(trim(bytes[start..<i]))
                start = i + 1
            }
            i += 1
        }
        elements.append(trim(bytes[min(start, bytes.count)...]))
        let nonEmpty = elements.filter { !$0.isEmpty }
        return nonEmpty.isEmpty ? [""] : nonEmpty
    }

    static func trim(_ bytes: ArraySlice<UInt8>) -> String {
        var slice = bytes
        while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return String(decoding: slice, as: UTF8.self)
    }
}
