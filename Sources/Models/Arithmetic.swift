/// Finds and evaluates a simple arithmetic question in everyday words or symbols: "what is 12 times
/// 7", "twenty one divided by three", "2.5 + 4 * 3". For the built-in agent; a sentence holds at
/// most one expression, numbers joined by binary operators, with the usual precedence.
struct Arithmetic: Equatable {
    enum Operator: Equatable {
        case plus, minus, times, dividedBy

        var words: String {
            switch self {
            case .plus: "plus"
            case .minus: "minus"
            case .times: "times"
            case .dividedBy: "divided by"
            }
        }

        var binds: Int { self == .plus || self == .minus ? 1 : 2 }
    }

    var operands: [Double]
    var operators: [Operator]

    /// The expression as words, e.g. "12 times 7".
    var spoken: String {
        var out = Self.format(operands[0])
        for (op, operand) in zip(operators, operands.dropFirst()) { out += " \(op.words) \(Self.format(operand))" }
        return out
    }

    /// nil when it divides by zero.
    var value: Double? {
        // Two stacks would do; with two precedence levels, folding the products first is simpler.
        var terms: [Double] = [operands[0]]
        var signs: [Operator] = []
        for (op, operand) in zip(operators, operands.dropFirst()) {
            switch op {
            case .times: terms[terms.count - 1] *= operand
            case .dividedBy:
                guard operand != 0 else { return nil }
                terms[terms.count - 1] /= operand
            case .plus, .minus:
                signs.append(op)
                terms.append(operand)
            }
        }
        var total = terms[0]
        for (sign, term) in zip(signs, terms.dropFirst()) { total += sign == .plus ? term : -term }
        return total
    }

    /// Whole numbers as such; others to at most 4 decimals, without trailing zeros.
    static func format(_ x: Double) -> String {
        if x == x.rounded(), abs(x) < 1e15 { return String(Int(x)) }
        let scaled = (x * 10_000).rounded() / 10_000
        if scaled == scaled.rounded(), abs(scaled) < 1e15 { return String(Int(scaled)) }
        var text = String(scaled)
        if text.contains("e") { return text }
        while text.hasSuffix("0") { text.removeLast() }
        return text
    }

    // MARK: Finding an expression

    private enum Token: Equatable {
        case number(Double)
        case op(Operator)
        case word(String)
    }

    /// The longest run of `number (operator number)+` in the text, if any.
    static func find(in text: String) -> Arithmetic? {
        let tokens = tokenize(text)
        var best: Arithmetic?
        var i = 0
        while i < tokens.count {
            guard case .number(let first) = tokens[i] else { i += 1; continue }
            var candidate = Arithmetic(operands: [first], operators: [])
            var j = i + 1
            while j + 1 < tokens.count, case .op(let op) = tokens[j], case .number(let next) = tokens[j + 1] {
                candidate.operators.append(op)
                candidate.operands.append(next)
                j += 2
            }
            if !candidate.operators.isEmpty, candidate.operators.count > (best?.operators.count ?? 0) { best = candidate }
            i = j
        }
        return best
    }

    private static let unitWords: [String: Int] = [
        "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
        "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
        "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
        "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    ]
    private static let scaleWords: [String: Int] = ["hundred": 100, "thousand": 1000, "million": 1_000_000]

    private static func tokenize(_ text: String) -> [Token] {
        var raw: [Token] = []
        var chars = Array(text.lowercased())
        chars.append(" ")
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c.isNumber && c.isASCII {
                var j = i
                while j < chars.count, (chars[j].isASCII && chars[j].isNumber) || chars[j] == "," || (chars[j] == "." && j + 1 < chars.count && chars[j + 1].isASCII && chars[j + 1].isNumber) { j += 1 }
                let digits = String(chars[i..<j]).replacingAll(",", with: "")
                if let value = Double(digits) { raw.append(.number(value)) }
                i = j
            } else if c.isLetter {
                var j = i
                while j < chars.count, chars[j].isLetter { j += 1 }
                raw.append(.word(String(chars[i..<j])))
                i = j
            } else {
                switch c {
                case "+": raw.append(.op(.plus))
                case "-" where i > 0 && chars[i - 1].isLetter && chars[i + 1].isLetter:
                    break  // a hyphenated word, "twenty-one"
                case "-", "−": raw.append(.op(.minus))
                case "*", "×", "·": raw.append(.op(.times))
                case "/", "÷": raw.append(.op(.dividedBy))
                default: break
                }
                i += 1
            }
        }
        return combine(raw)
    }

    /// Number words become numbers ("twenty one" → 21) and operator words operators
    /// ("multiplied by" → times).
    private static func combine(_ raw: [Token]) -> [Token] {
        var out: [Token] = []
        var i = 0
        while i < raw.count {
            if case .word(let w) = raw[i], unitWords[w] != nil {
                var total = 0, current = 0, any = false
                while i < raw.count, case .word(let w) = raw[i] {
                    if let unit = unitWords[w] { current += unit; any = true }
                    else if let scale = scaleWords[w], any {
                        if scale == 100 { current = max(current, 1) * 100 } else { total += max(current, 1) * scale; current = 0 }
                    } else if w == "and", any, i + 1 < raw.count, case .word(let next) = raw[i + 1], unitWords[next] != nil {
                        // "one hundred and five"
                    } else { break }
                    i += 1
                }
                if any { out.append(.number(Double(total + current))) }
                continue
            }
            if case .word(let w) = raw[i] {
                let next: String? = if i + 1 < raw.count, case .word(let n) = raw[i + 1] { n } else { nil }
                switch w {
                case "plus": out.append(.op(.plus))
                case "minus": out.append(.op(.minus))
                case "times", "x": out.append(.op(.times))
                case "over": out.append(.op(.dividedBy))
                case "multiplied" where next == "by": out.append(.op(.times)); i += 1
                case "divided" where next == "by": out.append(.op(.dividedBy)); i += 1
                default: out.append(raw[i])
                }
                i += 1
                continue
            }
            out.append(raw[i])
            i += 1
        }
        return out
    }
}

extension String {
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
