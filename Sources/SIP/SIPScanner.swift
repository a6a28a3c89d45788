/// A cursor over one header value's bytes (folds already joined into single spaces), with the
/// pieces of RFC 3261 section 25.1's grammar that the header parsers share: tokens, quoted
/// strings, linear white space. It never traps: every read checks the end first.
struct SIPScanner {
    let bytes: [UInt8]
    var index = 0

    init(_ text: some StringProtocol) { bytes = Array(text.utf8) }

    var atEnd: Bool { index >= bytes.count }

    func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
    }

    /// Consumes `byte` with the linear white space either side of it (SEMI, COLON, EQUAL, SLASH,
    /// COMMA of section 25.1), or nothing if it is not next.
    mutating func separator(_ byte: UInt8) -> Bool {
        let start = index
        skipWhitespace()
        guard peek() == byte else { index = start; return false }
        index += 1
        skipWhitespace()
        return true
    }

    /// 1*token-char, or nil when none is next.
    mutating func token() -> String? {
        let start = index
        while index < bytes.count, SIPGrammar.isTokenByte(bytes[index]) { index += 1 }
        return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
    }

    /// Bytes while `include` holds, possibly none.
    mutating func take(while include: (UInt8) -> Bool) -> String {
        let start = index
        while index < bytes.count, include(bytes[index]) { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// A quoted-string as it was written (quotes and quoted-pairs kept), or nil when it is not
    /// next or never closes.
    mutating func quotedString() -> String? {
        guard peek() == UInt8(ascii: "\"") else { return nil }
        let start = index
        index += 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: bytes[start..<index], as: UTF8.self)
            default: index += 1
            }
        }
        index = start
        return nil
    }

    var rest: String { index < bytes.count ? String(decoding: bytes[index...], as: UTF8.self) : "" }
}

/// Character classes and small rules of RFC 3261 section 25.1.
enum SIPGrammar {
    /// token = 1*(alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~")
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "!"), UInt8(ascii: "%"), UInt8(ascii: "*"),
             UInt8(ascii: "_"), UInt8(ascii: "+"), UInt8(ascii: "`"), UInt8(ascii: "'"), UInt8(ascii: "~"): true
        default: false
        }
    }

    static func isToken(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenByte)
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// 1*DIGIT no greater than `maximum`, leading zeros allowed (RFC 4475 section 3.1.1.1); nil for
    /// anything else, however many digits, without overflowing.
    static func number(_ text: some StringProtocol, maximum: UInt64) -> UInt64? {
        guard !text.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in text.utf8 {
            guard isDigit(byte) else { return nil }
            let (tens, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = tens.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow, !carry, sum <= maximum else { return nil }
            value = sum
        }
        return value
    }

    /// The text of a quoted-string without its quotes, quoted-pairs resolved.
    static func unquote(_ quoted: String) -> String {
        var bytes = Array(quoted.utf8)
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") else { return quoted }
        bytes = Array(bytes[1..<(bytes.count - 1)])
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\\"), i + 1 < bytes.count { out.append(bytes[i + 1]); i += 2 } else { out.append(bytes[i]); i += 1 }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `text` as a quoted-string, `"` and `\` escaped (section 25.1: quoted-pair).
    static func quote(_ text: String) -> String {
        var out = "\""
        for character in text {
            if character == "\"" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        out.append("\"")
        return out
    }
}
