/// A JSON value: what workers send their parent (one object per line) and what `--json` writes.
/// Written here rather than taken from Foundation, to keep the tool as lean as the server and its
/// start-up quick when it spawns itself.
enum JSON: Equatable {
    case object([(String, JSON)])
    case array([JSON])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    static func == (a: JSON, b: JSON) -> Bool {
        switch (a, b) {
        case let (.object(x), .object(y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case let (.array(x), .array(y)): x == y
        case let (.string(x), .string(y)): x == y
        case let (.number(x), .number(y)): x == y
        case let (.bool(x), .bool(y)): x == y
        case (.null, .null): true
        default: false
        }
    }

    static func int(_ value: Int) -> JSON { .number(Double(value)) }

    /// A string-to-count table, e.g. failures by reason.
    static func counts(_ table: [String: Int]) -> JSON {
        .object(table.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })
    }

    subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    var double: Double? { if case .number(let n) = self { n } else { nil } }
    var int: Int? { double.map { Int($0) } }
    var string: String? { if case .string(let s) = self { s } else { nil } }
    var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    var array: [JSON]? { if case .array(let a) = self { a } else { nil } }
    var countTable: [String: Int] {
        guard case .object(let members) = self else { return [:] }
        return Dictionary(members.compactMap { key, value in value.int.map { (key, $0) } }, uniquingKeysWith: +)
    }
}

// MARK: Writing

extension JSON: CustomStringConvertible {
    /// Compact, on one line: the worker protocol is line-delimited.
    var description: String {
        var out = ""
        write(to: &out, indent: nil)
        return out
    }

    /// Indented, for files a person reads.
    var pretty: String {
        var out = ""
        write(to: &out, indent: "")
        return out + "\n"
    }

    private func write(to out: inout String, indent: String?) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n):
            if !n.isFinite { out += "null" }  // JSON has no NaN or infinity
            else if n == n.rounded(), abs(n) < 1e15 { out += String(Int(n)) }
            else { out += String(n) }
        case .string(let s): JSON.quote(s, into: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += indent == nil ? "," : ", " }
                item.write(to: &out, indent: indent)
            }
            out += "]"
        case .object(let members):
            guard !members.isEmpty else { out += "{}"; return }
            let inner = indent.map { $0 + "  " }
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                if let inner { out += "\n" + inner }
                JSON.quote(key, into: &out)
                out += indent == nil ? ":" : ": "
                value.write(to: &out, indent: inner)
            }
            if let indent { out += "\n" + indent }
            out += "}"
        }
    }

    private static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

// MARK: Reading

extension JSON {
    struct ParseError: Error, CustomStringConvertible {
        let offset: Int
        var description: String { "invalid JSON at byte \(offset)" }
    }

    /// Parses one complete JSON text.
    init(parsing text: some StringProtocol) throws(ParseError) {
        var parser = Parser(bytes: Array(text.utf8))
        self = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.offset == parser.bytes.count else { throw ParseError(offset: parser.offset) }
    }

    private struct Parser {
        let bytes: [UInt8]
        var offset = 0

        mutating func skipSpace() {
            while offset < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[offset]) { offset += 1 }
        }

        private func fail() -> ParseError { ParseError(offset: offset) }

        private mutating func expect(_ literal: String) throws(ParseError) {
            for byte in literal.utf8 {
                guard offset < bytes.count, bytes[offset] == byte else { throw fail() }
                offset += 1
            }
        }

        mutating func value(depth: Int) throws(ParseError) -> JSON {
            // Bounded nesting: a malformed line from a dying worker must not blow the stack.
            guard depth < 64 else { throw fail() }
            skipSpace()
            guard offset < bytes.count else { throw fail() }
            switch bytes[offset] {
            case UInt8(ascii: "{"):
                offset += 1
                var members: [(String, JSON)] = []
                skipSpace()
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") { offset += 1; return .object(members) }
                while true {
                    skipSpace()
                    let key = try string()
                    skipSpace()
                    try expect(":")
                    members.append((key, try value(depth: depth + 1)))
                    skipSpace()
                    guard offset < bytes.count else { throw fail() }
                    offset += 1
                    if bytes[offset - 1] == UInt8(ascii: "}") { return .object(members) }
                    guard bytes[offset - 1] == UInt8(ascii: ",") else { throw fail() }
                }
            case UInt8(ascii: "["):
                offset += 1
                var items: [JSON] = []
                skipSpace()
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") { offset += 1; return .array(items) }
                while true {
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard offset < bytes.count else { throw fail() }
                    offset += 1
                    if bytes[offset - 1] == UInt8(ascii: "]") { return .array(items) }
                    guard bytes[offset - 1] == UInt8(ascii: ",") else { throw fail() }
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "n"): try expect("null"); return .null
            default: return .number(try number())
            }
        }

        private mutating func number() throws(ParseError) -> Double {
            let start = offset
            while offset < bytes.count, "+-0123456789.eE".utf8.contains(bytes[offset]) { offset += 1 }
            guard let n = Double(String(decoding: bytes[start..<offset], as: UTF8.self)) else { throw fail() }
            return n
        }

        private mutating func string() throws(ParseError) -> String {
            try expect("\"")
            var out: [UInt8] = []
            while offset < bytes.count {
                let byte = bytes[offset]
                offset += 1
                switch byte {
                case UInt8(ascii: "\""): return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard offset < bytes.count else { throw fail() }
                    let escaped = bytes[offset]
                    offset += 1
                    switch escaped {
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "u"):
                        guard offset + 4 <= bytes.count,
                              let code = UInt32(String(decoding: bytes[offset..<offset + 4], as: UTF8.self), radix: 16)
                        else { throw fail() }
                        offset += 4
                        // Surrogate pairs never occur in what this tool writes; map them to U+FFFD.
                        out += Array(String(Unicode.Scalar(code).map(Character.init) ?? "\u{FFFD}").utf8)
                    default: out.append(escaped)
                    }
                default: out.append(byte)
                }
            }
            throw fail()
        }
    }
}
