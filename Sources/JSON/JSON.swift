/// A JSON value (RFC 8259): what clients send as session events, what the server sends back, what
/// `parley-load` workers send their parent and what its `--json` writes.
///
/// Written here rather than taken from Foundation, to keep the server and tools lean. Objects keep
/// their members in order, as written, so output is stable and readable; a duplicated key is kept
/// too, and lookups take the last one, as JavaScript's `JSON.parse` does.
public enum JSON: Equatable, Sendable {
    case object([(String, JSON)])
    case array([JSON])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    public static func == (a: JSON, b: JSON) -> Bool {
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

    public static func int(_ value: Int) -> JSON { .number(Double(value)) }

    /// A string-to-count table, e.g. failures by reason.
    public static func counts(_ table: [String: Int]) -> JSON {
        .object(table.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })
    }

    /// The member named `key` (the last one, if the key is repeated); nil if absent or not an object.
    public subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.0 == key }?.1
    }

    public var double: Double? { if case .number(let n) = self { n } else { nil } }
    /// The number if it is a whole number that fits in an `Int`; nil otherwise (never traps, so
    /// untrusted input such as `1e300` or `2.5` is simply not an integer).
    public var int: Int? { double.flatMap { Int(exactly: $0) } }
    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var array: [JSON]? { if case .array(let a) = self { a } else { nil } }
    public var object: [(String, JSON)]? { if case .object(let m) = self { m } else { nil } }
    public var isNull: Bool { if case .null = self { true } else { false } }

    public var countTable: [String: Int] {
        guard case .object(let members) = self else { return [:] }
        return Dictionary(members.compactMap { key, value in value.int.map { (key, $0) } }, uniquingKeysWith: +)
    }
}

// MARK: Writing

extension JSON: CustomStringConvertible {
    /// Compact, on one line: the worker protocol is line-delimited, and WebSocket events are one
    /// message each.
    public var description: String {
        var out = ""
        write(to: &out, indent: nil)
        return out
    }

    /// Indented, for files a person reads.
    public var pretty: String {
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

    /// `s` as a JSON string literal, quotes included (for writers of JSON lines, such as the log).
    public static func quoted(_ s: String) -> String {
        var out = ""
        quote(s, into: &out)
        return out
    }

    private static func quote(_ s: String, into out: inout String) {
        out += "\""
        // Most strings (ids, base64 audio, plain text) need no escaping: append them whole.
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            out += s
            out += "\""
            return
        }
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
