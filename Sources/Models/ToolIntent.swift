import JSON

/// What a request for a tool says, read from the user's words: which declared tools it names, and
/// arguments for a tool's JSON Schema. The one reading shared by the built-in agent (which calls
/// the first tool named) and `parley mock-llm` (which calls every one named), so the two hear a
/// request alike.
public enum ToolIntent {
    /// Verbs a function's name starts with that a person asking for it does not say: "weather"
    /// asks for `get_weather`.
    static let verbs: Set<String> = ["get", "set", "fetch", "lookup", "look", "find", "retrieve", "query", "search", "read",
                                         "load", "show", "list", "check", "do", "make", "run", "call", "perform"]
    /// Other words of names that a request need not say: "weather" asks for `get_current_weather`
    /// too.
    static let fillers: Set<String> = ["current", "info", "information", "data", "details", "up", "by", "for", "of", "the", "a", "an",
                                           "to", "from", "in", "on", "at", "with", "and", "my", "latest"]

    /// The tools `text` asks for, as indices into `names`, in the order it says them: a tool is
    /// asked for by its whole name ("get_weather") or by all the words of its name but verbs and
    /// fillers ("weather", a plural allowed), case-insensitively; tools said at the same place
    /// come in the order they were declared. The built-in agent calls the first; the mock calls
    /// them all (parallel calls).
    public static func named(in text: String, _ names: [String]) -> [Int] {
        let lowered = text.lowercased()
        // Tokens keep '_' and '-', so a whole name is one; words split those too.
        let tokens = lowered.split { !($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }.map(String.init)
        let words = lowered.split { !($0.isLetter || $0.isNumber) }.map(String.init)
        var found: [(position: Int, order: Int)] = []
        for (order, name) in names.enumerated() {
            var position: Int?
            if let whole = tokens.firstIndex(of: name.lowercased()) {
                // Where its first word is, counting the words of the tokens before it.
                position = tokens[..<whole].reduce(0) { $0 + $1.split { $0 == "_" || $0 == "-" }.count }
            } else {
                let all = ToolName.words(of: name)
                let wanted = all.filter { !verbs.contains($0) && !fillers.contains($0) }
                var hits: [Int] = []
                for word in wanted.isEmpty ? all : wanted {
                    guard let hit = words.firstIndex(where: { ToolName.same($0, word) }) else { hits = []; break }
                    hits.append(hit)
                }
                position = hits.min()
            }
            if let position { found.append((position, order)) }
        }
        return found.sorted { ($0.position, $0.order) < ($1.position, $1.order) }.map(\.order)
    }

    // MARK: Arguments

    /// Property names that want a place.
    static let placeNames = ["city", "location", "place", "destination", "town", "country", "region", "where", "address"]
    /// Words after "in" that end a place written in lowercase ("in new york today").
    static let notPlaces: Set<String> = ["the", "a", "an", "today", "tomorrow", "tonight", "now", "right", "please", "this", "next", "and",
                                         "or", "at", "on", "for", "to", "in", "with", "me", "my", "it", "us", "there", "here", "then",
                                         "general", "celsius", "fahrenheit", "degrees", "morning", "afternoon", "evening", "weather"]
    /// Words too common to be what a string argument is about.
    static let commonWords: Set<String> = ["what", "what's", "whats", "is", "are", "was", "the", "a", "an", "in", "for", "to", "of", "on",
                                           "at", "me", "my", "i", "you", "it", "please", "can", "could", "would", "will", "tell", "give",
                                           "and", "or", "how", "about", "with", "from", "there", "here", "now", "today", "do", "does",
                                           "like", "want", "need", "some", "any", "this", "that", "s", "be", "let", "know"]

    /// Arguments for a JSON Schema object: a value for each of its `properties`, made up from the
    /// user's words (`nameWords`: the words of the tool's name, which are not what it is about).
    /// Numbers go to the number properties in the order both are written: "add 2 and 3" is
    /// `a: 2, b: 3`, and a property past the numbers said takes the last.
    public static func arguments(for schema: JSON?, prompt: String, avoiding nameWords: [String], depth: Int = 0) -> JSON {
        let properties = schema?["properties"]?.object ?? []
        var numbersTaken = 0
        return .object(properties.map { name, property in
            (name, value(for: property, named: name, prompt: prompt, avoiding: nameWords, depth: depth, numbersTaken: &numbersTaken))
        })
    }

    private static func value(for property: JSON, named name: String, prompt: String, avoiding nameWords: [String], depth: Int,
                              numbersTaken: inout Int) -> JSON {
        if let constant = property["const"] { return constant }
        // A choice of schemas: the first will do.
        if property["type"] == nil, let first = (property["anyOf"] ?? property["oneOf"])?.array?.first {
            return value(for: first, named: name, prompt: prompt, avoiding: nameWords, depth: depth, numbersTaken: &numbersTaken)
        }
        let enumeration = property["enum"]?.array ?? []
        let said = BuiltinAgent.words(prompt)
        switch schemaType(of: property) {
        case "string":
            let lowered = name.lowercased()
            if placeNames.contains(where: lowered.contains), let place = place(in: prompt) { return .string(place) }
            if let spoken = enumeration.first(where: { $0.string.map { mentions(said, $0) } ?? false }) { return spoken }
            if let first = enumeration.first { return first }
            return .string(keyword(in: prompt, avoiding: nameWords))
        case "integer", "number":
            let integer = schemaType(of: property) == "integer"
            let numbers = self.numbers(in: prompt).map { integer ? $0.rounded() : $0 }
            if !enumeration.isEmpty { return enumeration.first { item in numbers.contains { item.double == $0 } } ?? enumeration[0] }
            var n = numbers.isEmpty ? 1 : numbers[min(numbersTaken, numbers.count - 1)]
            numbersTaken += 1
            if let minimum = property["minimum"]?.double, n < minimum { n = integer ? minimum.rounded(.up) : minimum }
            if let maximum = property["maximum"]?.double, n > maximum { n = integer ? maximum.rounded(.down) : maximum }
            return .number(n)
        case "boolean": return enumeration.first ?? .bool(true)
        case "array": return .array([])
        case "object": return depth < 4 ? arguments(for: property, prompt: prompt, avoiding: nameWords, depth: depth + 1) : .object([])
        case "null": return .null
        default: return enumeration.first ?? .string(keyword(in: prompt, avoiding: nameWords))
        }
    }

    /// A property's type: its `type` (the first that is not "null", if it lists several), else
    /// what its `enum`, `properties` or `items` imply, else "string".
    static func schemaType(of property: JSON) -> String {
        if let type = property["type"]?.string { return type }
        if let types = property["type"]?.array?.compactMap(\.string), let type = types.first(where: { $0 != "null" }) ?? types.first {
            return type
        }
        switch property["enum"]?.array?.first {
        case .number?: return "number"
        case .bool?: return "boolean"
        case .some: return "string"
        case nil: break
        }
        if property["properties"] != nil { return "object" }
        if property["items"] != nil { return "array" }
        return "string"
    }

    /// Whether the words said include `phrase`'s words, in a row ("in fahrenheit", "new york").
    private static func mentions(_ said: [String], _ phrase: String) -> Bool {
        let wanted = BuiltinAgent.words(phrase)
        guard !wanted.isEmpty, wanted.count <= said.count else { return false }
        return (0...(said.count - wanted.count)).contains { Array(said[$0..<($0 + wanted.count)]) == wanted }
    }

    /// The place a message names: the capitalised words after "in", "for" or "to" ("Paris",
    /// "New York", "Rio de Janeiro"); else, for a message written in lowercase (as recognisers
    /// write speech), the words after "in", capitalised.
    static func place(in text: String) -> String? {
        let words = text.split(whereSeparator: \.isWhitespace)
        let particles: Set<String> = ["de", "da", "del", "der", "di", "la", "le", "von", "van", "of", "upon", "sur", "am"]
        for (i, word) in words.enumerated() where ["in", "for", "to"].contains(word.lowercased()) {
            var place: [Substring] = []
            var j = i + 1
            while j < words.count {
                let next = words[j]
                let bare = clean(next)
                guard let first = bare.first, !bare.isEmpty else { break }
                if first.isUppercase {
                    if place.isEmpty && (bare == "I" || bare.hasPrefix("I'")) { break }
                } else if !(particles.contains(String(bare)) && !place.isEmpty && j + 1 < words.count && bare.count == next.count
                            && clean(words[j + 1]).first?.isUppercase == true) {
                    break
                }
                place.append(bare)
                j += 1
                if bare.count != next.count { break }  // punctuation after it ends the place
            }
            if !place.isEmpty { return place.joined(separator: " ") }
        }
        for (i, word) in words.enumerated() where word.lowercased() == "in" {
            var place: [String] = []
            for next in words[(i + 1)...].prefix(3) {
                let bare = clean(next)
                guard !bare.isEmpty, bare.allSatisfy({ $0.isLetter || $0 == "-" || $0 == "'" }), !notPlaces.contains(bare.lowercased()) else { break }
                place.append(bare.prefix(1).uppercased() + bare.dropFirst())
                if bare.count != next.count { break }
            }
            if !place.isEmpty { return place.joined(separator: " ") }
        }
        return nil
    }

    /// A word without the punctuation around it (an apostrophe or hyphen inside it stays).
    private static func clean(_ word: Substring) -> Substring {
        let start = word.drop { !($0.isLetter || $0.isNumber) }
        let body = start.prefix { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "'" || $0 == "’" || $0 == "." }
        var trimmed = body
        while let last = trimmed.last, !(last.isLetter || last.isNumber) { trimmed = trimmed.dropLast() }
        return trimmed
    }

    /// The numbers a message writes in digits, in order ("1,000", "-3", "2.5").
    static func numbers(in text: String) -> [Double] {
        var out: [Double] = []
        var current = ""
        func flush() {
            var token = current
            current = ""
            while token.hasSuffix(".") { token.removeLast() }
            if token.contains(where: \.isNumber), let value = Double(token) { out.append(value) }
        }
        for c in text {
            if (c.isASCII && (c.isNumber || c == ".")) || (c == "-" && current.isEmpty) {
                current.append(c)
            } else if c == ",", !current.isEmpty {
                continue
            } else {
                flush()
            }
        }
        flush()
        return out
    }

    /// A short string from the message for an argument that wants one: a quoted span, else its
    /// last word that is neither common nor a word of the function's name; else empty.
    static func keyword(in text: String, avoiding nameWords: [String]) -> String {
        if let quoted = BuiltinAgent.quoted(in: text), !quoted.trimmed.isEmpty { return BuiltinAgent.quote(quoted.trimmed) }
        let candidates = text.split(whereSeparator: \.isWhitespace).map(clean).filter { !$0.isEmpty }
        let significant = candidates.last { word in
            let lowered = word.lowercased()
            return !commonWords.contains(lowered) && !verbs.contains(lowered) && !nameWords.contains { ToolName.same(lowered, $0) }
        }
        return String(significant ?? "")
    }
}
