extension JSON {
    /// The deepest nesting of arrays and objects accepted: enough for any real event, and a bound
    /// on the parser's recursion, so hostile input (`[[[[...`) cannot exhaust the stack.
    public static let maxDepth = 64

    /// Parses one complete JSON text (RFC 8259, strictly): no trailing commas, comments, single
    /// quotes, leading zeros, `NaN` or raw control characters in strings; nothing but white space
    /// after the value.
    public init(parsing text: some StringProtocol) throws(ParseError) {
        let parsed = text.utf8.withContiguousStorageIfAvailable { bytes in
            Result { () throws(ParseError) in try JSON.parse(bytes) }
        }
        if let parsed {
            self = try parsed.get()
        } else {
            let bytes = Array(text.utf8)
            self = try bytes.withUnsafeBufferPointer { bytes in
                Result { () throws(ParseError) in try JSON.parse(bytes) }
            }.get()
        }
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(ParseError) -> JSON {
        var parser = Parser(bytes: bytes)
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.offset == bytes.count else { throw parser.fail("unexpected \(parser.describeNext()) after the JSON value") }
        return value
    }
}

/// A recursive-descent reader over UTF-8 bytes. The input came from a Swift `String`, so it is
/// valid UTF-8 already; the parser only has to check JSON's own grammar.
private struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    var offset = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    private var atEnd: Bool { offset >= bytes.count }

    mutating func skipSpace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return
            }
        }
    }

    func fail(_ reason: String, at position: Int? = nil) -> JSON.ParseError {
        JSON.ParseError(offset: position ?? offset, reason: reason)
    }

    /// The next character, for messages: `'x'`, `U+000A`, or "end of input".
    func describeNext() -> String {
        guard !atEnd else { return "end of input" }
        let byte = bytes[offset]
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        if byte < 0x80 { return "U+" + hex4(UInt32(byte)) }
        return "non-ASCII character"
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(JSON.ParseError) {
        guard !atEnd, bytes[offset] == byte else { throw fail("expected \(what), found \(describeNext())") }
        offset += 1
    }

    private mutating func literal(_ word: StaticString, _ value: JSON) throws(JSON.ParseError) -> JSON {
        let start = offset
        let text = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        for byte in text {
            guard !atEnd, bytes[offset] == byte else { throw fail("invalid literal (expected \(word))", at: start) }
            offset += 1
        }
        return value
    }

    mutating func value(depth: Int) throws(JSON.ParseError) -> JSON {
        skipSpace()
        guard !atEnd else { throw fail("unexpected end of input, expected a value") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw fail("unexpected \(describeNext()), expected a value")
        }
    }

    private mutating func object(depth: Int) throws(JSON.ParseError) -> JSON {
        guard depth <= JSON.maxDepth else { throw fail("nesting deeper than \(JSON.maxDepth) levels") }
        offset += 1
        var members: [(String, JSON)] = []
        skipSpace()
        if !atEnd, bytes[offset] == UInt8(ascii: "}") { offset += 1; return .object(members) }
        while true {
            skipSpace()
            guard !atEnd, bytes[offset] == UInt8(ascii: "\"") else { throw fail("expected a string key, found \(describeNext())") }
            let key = try string()
            skipSpace()
            try expect(UInt8(ascii: ":"), "':' after an object key")
            members.append((key, try value(depth: depth)))
            skipSpace()
            guard !atEnd else { throw fail("unexpected end of input inside an object") }
            switch bytes[offset] {
            case UInt8(ascii: "}"): offset += 1; return .object(members)
            case UInt8(ascii: ","): offset += 1
            default: throw fail("expected ',' or '}' in an object, found \(describeNext())")
            }
        }
    }

    private mutating func array(depth: Int) throws(JSON.ParseError) -> JSON {
        guard depth <= JSON.maxDepth else { throw fail("nesting deeper than \(JSON.maxDepth) levels") }
        offset += 1
        var items: [JSON] = []
        skipSpace()
        if !atEnd, bytes[offset] == UInt8(ascii: "]") { offset += 1; return .array(items) }
        while true {
            items.append(try value(depth: depth))
            skipSpace()
            guard !atEnd else { throw fail("unexpected end of input inside an array") }
            switch bytes[offset] {
            case UInt8(ascii: "]"): offset += 1; return .array(items)
            case UInt8(ascii: ","): offset += 1
            default: throw fail("expected ',' or ']' in an array, found \(describeNext())")
            }
        }
    }

    /// RFC 8259 section 6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func number() throws(JSON.ParseError) -> Double {
        let start = offset
        func isDigit(_ i: Int) -> Bool { i < bytes.count && bytes[i] >= UInt8(ascii: "0") && bytes[i] <= UInt8(ascii: "9") }
        func digits() { while isDigit(offset) { offset += 1 } }

        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        guard isDigit(offset) else { throw fail("expected a digit in a number, found \(describeNext())") }
        if bytes[offset] == UInt8(ascii: "0") {
            offset += 1
            guard !isDigit(offset) else { throw fail("number with a leading zero", at: start) }
        } else {
            digits()
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            guard isDigit(offset) else { throw fail("expected a digit after '.' in a number, found \(describeNext())") }
            digits()
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            guard isDigit(offset) else { throw fail("expected a digit in a number's exponent, found \(describeNext())") }
            digits()
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
        guard let n = Double(text), n.isFinite else { throw fail("number \(text) is out of range", at: start) }
        return n
    }

    private mutating func string() throws(JSON.ParseError) -> String {
        offset += 1  // the opening quote
        let start = offset
        // Fast path: no escapes, which is nearly every string (ids, base64 audio, plain text).
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                offset += 1
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<(offset - 1)]), as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw fail("unescaped control character U+\(hex4(UInt32(byte))) in a string") }
            offset += 1
        }
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<offset]))
        while offset < bytes.count {
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try escape(into: &out)
            case ..<0x20:
                throw fail("unescaped control character U+\(hex4(UInt32(byte))) in a string")
            default:
                out.append(byte)
                offset += 1
            }
        }
        throw fail("unterminated string", at: start - 1)
    }

    private mutating func escape(into out: inout [UInt8]) throws(JSON.ParseError) {
        let start = offset
        offset += 1  // the backslash
        guard !atEnd else { throw fail("unterminated string") }
        let escaped = bytes[offset]
        offset += 1
        switch escaped {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escaped)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "u"):
            let unit = try hexUnit(escapeStart: start)
            var scalar = Unicode.Scalar(unit)
            if (0xD800...0xDBFF).contains(unit) {
                // A high surrogate: with a low one right after, the pair is one scalar (emoji
                // arrive this way from JSON.stringify in some clients).
                if offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") {
                    let save = offset
                    offset += 2
                    let low = try hexUnit(escapeStart: save)
                    if (0xDC00...0xDFFF).contains(low) {
                        scalar = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                    } else {
                        offset = save  // not a pair: read that escape on its own next
                    }
                }
            }
            // A lone surrogate is grammatical JSON (a JavaScript string cut mid-emoji serialises
            // to one) but is not a Unicode scalar: it becomes U+FFFD, as in WHATWG decoding.
            out.append(contentsOf: String(Character(scalar ?? "\u{FFFD}")).utf8)
        default:
            offset = start
            throw fail("invalid escape '\\\(Character(Unicode.Scalar(escaped)))' in a string")
        }
    }

    /// Four hex digits after `\u` (the `u` already read).
    private mutating func hexUnit(escapeStart: Int) throws(JSON.ParseError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw fail("\\u escape needs four hex digits", at: escapeStart) }
        var unit: UInt32 = 0
        for i in offset..<(offset + 4) {
            let byte = bytes[i]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("\\u escape needs four hex digits", at: escapeStart)
            }
            unit = unit << 4 | UInt32(digit)
        }
        offset += 4
        return unit
    }
}

private func hex4(_ value: UInt32) -> String {
    let hex = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - hex.count)) + hex
}
