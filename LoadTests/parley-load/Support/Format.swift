/// Number formatting for summaries, without Foundation's String(format:).
enum Format {
    /// `value` with `digits` decimals, rounded half away from zero.
    static func fixed(_ value: Double, _ digits: Int) -> String {
        guard value.isFinite else { return "n/a" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        let whole = Int(scaled / scale)
        var out = (value < 0 && scaled > 0 ? "-" : "") + String(whole)
        if digits > 0 {
            let fraction = String(Int(scaled - Double(whole) * scale))
            out += "." + String(repeating: "0", count: digits - fraction.count) + fraction
        }
        return out
    }

    /// 1234567 as "1,234,567": connection counts are read at a glance.
    static func grouped(_ value: Int) -> String {
        let digits = Array(String(abs(value)))
        var out = ""
        for (i, d) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
            out.append(d)
        }
        return (value < 0 ? "-" : "") + out
    }

    static func bytes(_ value: Double) -> String {
        switch abs(value) {
        case ..<1024: return "\(Int(value.rounded())) B"
        case ..<1_048_576: return fixed(value / 1024, 1) + " KiB"
        case ..<1_073_741_824: return fixed(value / 1_048_576, 1) + " MiB"
        default: return fixed(value / 1_073_741_824, 2) + " GiB"
        }
    }

    /// Failure tables: "ECONNREFUSED: 12, HTTP 503: 3", or "none".
    static func reasons(_ table: [String: Int]) -> String {
        let nonzero = table.filter { $0.value > 0 }
        guard !nonzero.isEmpty else { return "none" }
        return nonzero.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { "\($0.key): \(grouped($0.value))" }.joined(separator: ", ")
    }

    /// One line of a summary: the label in a field of `width` columns, then the value.
    static func row(_ label: String, _ value: String, width: Int = 17) -> String {
        "  " + label + String(repeating: " ", count: max(1, width - label.count)) + value
    }
}
