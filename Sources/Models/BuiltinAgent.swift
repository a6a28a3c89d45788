import JSON

/// The model Parley answers with when no LLM is configured: a small rule-based agent, offline and
/// deterministic (same conversation, same reply), so a fresh server does something useful and
/// tests have a fixed point.
///
/// It calls one of the client's functions when the user asks plainly for what it does (see
/// `respond`), and answers with a function's output when the conversation ends with one.
/// Otherwise it looks at the latest user message and, in this order: explains itself and how to
/// plug in a real model (when asked, or when it understands nothing); summarises what the user has
/// said; counts words and characters; does arithmetic ("what is 12 times 7", in digits or words);
/// admits it has no clock; answers greetings, thanks and goodbyes; and acknowledges a spoken turn
/// it could not transcribe by its length.
public struct BuiltinAgent: Sendable {
    /// How to replace this agent with a real model, quoted in its replies.
    public static let realModelCommand = "parley serve --llm openai --llm-base-url URL --llm-model NAME"
    /// Its answer to a user who speaks another language (`ModelRequest.language`): its rules read
    /// English words only, so it says so, in English, rather than guess.
    public static let onlyEnglish = "Sorry, I speak only English. A real model answers in your language: \(realModelCommand)."

    /// What the agent does with a conversation: say something, or call one of the client's
    /// functions with these arguments (a JSON object's text).
    public enum Action: Sendable, Equatable {
        case say(String)
        case call(name: String, arguments: String)
    }

    public init() {}

    /// What to do next, given the functions the client declared. It calls one when `choice`
    /// allows and the conversation ends with a typed user message that asks plainly for what it
    /// does: the words of its name, but verbs and fillers ("weather" for `get_weather` or
    /// `getCurrentWeather`), or the whole name. `required` calls the tool the message names or
    /// else the first; a named function is called whatever the message says. It never calls once
    /// the conversation ends with a function's output: it answers with it.
    public func respond(to messages: [ChatMessage], tools: [ToolDefinition] = [], choice: ToolChoice = .auto) -> Action {
        if !tools.isEmpty, choice != .none, Self.trailingResults(messages).isEmpty, let (tool, prompt) = Self.toolToCall(messages, tools, choice) {
            return .call(name: tool.name, arguments: ToolIntent.arguments(for: tool.parameters, prompt: prompt, avoiding: ToolName.words(of: tool.name)).description)
        }
        return .say(reply(to: messages))
    }

    /// What it says (it calls no function here): the answer to a function's output when the
    /// conversation ends with one, else its reply to the latest user message.
    public func reply(to messages: [ChatMessage]) -> String {
        let results = Self.trailingResults(messages)
        if !results.isEmpty { return answer(results, in: messages) }
        let users = messages.filter { $0.role == .user }
        guard let last = users.last else { return Self.introduction }
        if let ms = last.spokenMilliseconds { return spokenTurn(ms, count: users.count { $0.spokenMilliseconds != nil }) }

        let text = last.text
        let words = Self.words(text)
        let greeting = Self.isGreeting(words) ? "Hello! " : ""
        if Self.asksWhatItIs(text, words) { return greeting + Self.explanation }
        if Self.asksForSummary(text, words) { return greeting + summary(of: users.dropLast()) }
        if let count = Self.countRequest(text, words) { return greeting + counting(count, in: text, previous: users.dropLast().last) }
        if let arithmetic = Arithmetic.find(in: text) {
            guard let value = arithmetic.value else { return greeting + "\(arithmetic.spoken) has no answer: dividing by zero is undefined." }
            return greeting + "\(arithmetic.spoken) is \(Arithmetic.format(value))."
        }
        if Self.asksForTime(text, words) {
            return greeting + "I can't tell you the time: I'm a small rule-based agent with no clock, so my answers never change with it. A real model plugged into Parley could."
        }
        if !greeting.isEmpty { return Self.introduction }
        if words.contains(where: { $0.hasPrefix("thank") }) { return "You're welcome! Ask me something else whenever you like." }
        if words.contains("bye") || words.contains("goodbye") { return "Goodbye! Thanks for talking with Parley." }
        return "I'm a small rule-based agent, and I didn't understand \"\(Self.quote(text))\". " + Self.abilities + " " + Self.plugIn
    }

    // MARK: Replies

    static let abilities = "I can answer greetings, do arithmetic (\"what is 12 times 7\"), count the words in a message (\"how many words in 'to be or not to be'\"), and summarise what you have said."
    static let plugIn = "For real conversation, start Parley with a language model: \(realModelCommand), which works with any OpenAI-compatible server."
    static let introduction = "Hello! I'm Parley's built-in agent, a small rule-based program rather than a language model. " + abilities
    static let explanation = "I'm Parley's built-in agent: a small set of rules, not a language model, so I only understand a few kinds of request. " + abilities + " " + plugIn

    private func spokenTurn(_ ms: Int, count: Int) -> String {
        let ordinal = count > 1 ? " That was your \(Self.ordinal(count)) spoken turn." : ""
        return "I heard you speak for about \(Self.seconds(ms)), but no transcriber is configured, so I can't tell what you said.\(ordinal) "
            + "You can type instead, or run Parley with speech recognition and a real model (\(Self.realModelCommand))."
    }

    private func summary(of earlier: ArraySlice<ChatMessage>) -> String {
        guard !earlier.isEmpty else { return "You haven't said anything before this, so there is nothing to summarise yet." }
        let typed = earlier.filter { $0.spokenMilliseconds == nil }
        let spoken = earlier.compactMap(\.spokenMilliseconds)
        var parts: [String] = []
        if !typed.isEmpty {
            let shown = typed.suffix(5).map { "\"\(Self.quote($0.text))\"" }
            let more = typed.count > 5 ? " (and \(typed.count - 5) earlier)" : ""
            let wordCount = typed.reduce(0) { $0 + Self.countedWords($1.text) }
            parts.append("you wrote \(Self.plural(typed.count, "message")) of \(Self.plural(wordCount, "word")) in all: \(Self.list(shown))\(more)")
        }
        if !spoken.isEmpty {
            parts.append("you spoke \(spoken.count == 1 ? "once" : "\(spoken.count) times") for about \(Self.seconds(spoken.reduce(0, +))) in all, which I could not transcribe")
        }
        return "So far " + parts.joined(separator: ", and ") + "."
    }

    private enum Count { case words, characters, letters }

    private func counting(_ what: Count, in text: String, previous: ChatMessage?) -> String {
        let target: String
        let name: String
        if let quoted = Self.quoted(in: text) {
            target = quoted
            name = "\"\(Self.quote(quoted))\""
        } else if let colon = text.firstIndex(of: ":"), !text[text.index(after: colon)...].allSatisfy(\.isWhitespace) {
            target = String(text[text.index(after: colon)...]).trimmed
            name = "\"\(Self.quote(target))\""
        } else if let previous, previous.spokenMilliseconds == nil {
            target = previous.text
            name = "Your previous message"
        } else {
            target = text
            name = "Your message"
        }
        let words = Self.countedWords(target)
        let characters = target.count
        let letters = target.count { $0.isLetter }
        switch what {
        case .words: return "\(name) has \(Self.plural(words, "word"))."
        case .characters: return "\(name) has \(Self.plural(characters, "character")) (\(Self.plural(letters, "letter")), \(Self.plural(words, "word")))."
        case .letters: return "\(name) has \(Self.plural(letters, "letter"))."
        }
    }

    // MARK: Recognising requests

    static func words(_ text: String) -> [String] {
        text.lowercased().split { !$0.isLetter && !$0.isNumber && $0 != "'" }.map(String.init)
    }

    private static func isGreeting(_ words: [String]) -> Bool {
        guard let first = words.first else { return false }
        if ["hello", "hi", "hey", "hiya", "howdy", "greetings", "yo"].contains(first) { return true }
        return first == "good" && words.count > 1 && ["morning", "afternoon", "evening", "day"].contains(words[1])
    }

    private static func asksWhatItIs(_ text: String, _ words: [String]) -> Bool {
        let t = text.lowercased()
        let phrases = ["who are you", "what are you", "what can you do", "what do you do", "how do you work", "are you a bot", "are you real",
                       "are you an ai", "real model", "real llm", "language model", "plug in", "connect a", "use openai", "use an llm"]
        return phrases.contains { t.contains($0) } || words == ["help"] || words.first == "help"
    }

    private static func asksForSummary(_ text: String, _ words: [String]) -> Bool {
        let t = text.lowercased()
        return words.contains { $0.hasPrefix("summar") || $0 == "recap" }
            || ["what did i say", "what have i said", "what i said", "what i've said", "what we talked"].contains { t.contains($0) }
    }

    private static func countRequest(_ text: String, _ words: [String]) -> Count? {
        let counting = words.contains("count") || words.contains("many") || words.contains("number")
        guard counting else { return nil }
        if words.contains(where: { $0.hasPrefix("character") || $0 == "chars" }) { return .characters }
        if words.contains(where: { $0.hasPrefix("letter") }) { return .letters }
        if words.contains(where: { $0.hasPrefix("word") }) { return .words }
        return nil
    }

    private static func asksForTime(_ text: String, _ words: [String]) -> Bool {
        let t = text.lowercased()
        return ["what time", "the time", "what day", "what date", "today's date", "what year"].contains { t.contains($0) }
    }

    // MARK: Calling functions

    /// The function to call and the user text its arguments come from, or nil to say something.
    private static func toolToCall(_ messages: [ChatMessage], _ tools: [ToolDefinition], _ choice: ToolChoice) -> (ToolDefinition, String)? {
        // Only a typed user message that ends the conversation asks for anything; a named or
        // required call takes its arguments from the latest typed message, wherever it is.
        let last = messages.last { $0.role != .system }
        let asked = last.flatMap { $0.role == .user && $0.spokenMilliseconds == nil ? $0.text : nil }
        let prompt = asked ?? messages.last { $0.role == .user && $0.spokenMilliseconds == nil }?.text ?? ""
        let named = asked.flatMap { ToolIntent.named(in: $0, tools.map(\.name)).first.map { tools[$0] } }
        switch choice {
        case .none: return nil
        case .function(let name):
            if let tool = tools.first(where: { $0.name == name }) { return (tool, prompt) }
            return named.map { ($0, prompt) }
        case .required, .mcp: return (named ?? tools[0], prompt)
        case .auto:
            // Arithmetic it works out itself: "12 times 7" asks for no `get_time`.
            guard let named, let asked else { return nil }
            guard Arithmetic.find(in: asked) == nil || mentionsWholeName(asked, named) else { return nil }
            return (named, prompt)
        }
    }

    private static func mentionsWholeName(_ text: String, _ tool: ToolDefinition) -> Bool {
        text.lowercased().split { !($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }.contains { $0 == tool.name.lowercased() }
    }

    // MARK: Answering with a function's output

    /// The function outputs the conversation ends with (ignoring system messages), in order.
    static func trailingResults(_ messages: [ChatMessage]) -> [ChatMessage] {
        var results: [ChatMessage] = []
        for message in messages.reversed() where message.role != .system {
            guard message.role == .tool else { break }
            results.append(message)
        }
        return results.reversed()
    }

    /// A sentence for each output: "It's 21 degrees and clear in Paris." for a weather report,
    /// else what the function returned.
    private func answer(_ results: [ChatMessage], in messages: [ChatMessage]) -> String {
        let calls = messages.flatMap(\.toolCalls)
        return results.map { result in
            let call = calls.last { $0.id == result.toolCallID }
            return Self.sentence(output: result.text, call: call)
        }.joined(separator: " ")
    }

    static func sentence(output: String, call: ToolCall?) -> String {
        let tool = call?.name ?? "the function"
        let text = output.trimmed
        guard !text.isEmpty else { return "There was no output from \(tool)." }
        let returned = "Here is what \(tool) returned: "
        guard let json = try? JSON(parsing: text) else { return returned + sentenceEnd(quote(text, limit: 200)) }
        switch json {
        case .object(let members):
            if members.isEmpty { return "There was no output from \(tool)." }
            if members.count == 1, members[0].0.lowercased() == "error", let problem = members[0].1.string ?? members[0].1["message"]?.string {
                return "The call to \(tool) failed: " + sentenceEnd(quote(problem, limit: 200))
            }
            let arguments = call.flatMap { try? JSON(parsing: $0.arguments) }
            if let weather = weatherSentence(members, arguments: arguments) { return weather }
            var parts = members.prefix(8).map { key, value in "\(key.replacing("_", with: " ")) is \(spoken(value))" }
            if members.count > 8 { parts.append("\(members.count - 8) more") }
            return returned + list(parts) + "."
        case .array(let items):
            guard !items.isEmpty else { return "\(returned)nothing." }
            return returned + list(items.prefix(8).map(spoken) + (items.count > 8 ? ["\(items.count - 8) more"] : [])) + "."
        default:
            return returned + sentenceEnd(spoken(json))
        }
    }

    /// "It's 21 degrees and clear in Paris.": for an object with a temperature, and the sky and
    /// place if it has them (the place else from the call's arguments).
    private static func weatherSentence(_ members: [(String, JSON)], arguments: JSON?) -> String? {
        func number(_ value: JSON) -> Double? { value.double ?? value.string.flatMap { Double($0.trimmed) } }
        guard let (key, value) = members.first(where: { key, value in
            let k = key.lowercased()
            return (k.hasPrefix("temp") || k == "degrees") && number(value) != nil
        }), let degrees = number(value) else { return nil }
        let k = key.lowercased()
        let unitText = (members.first { ["unit", "units"].contains($0.0.lowercased()) }?.1.string ?? "").lowercased()
        var unit = ""
        if k.hasSuffix("_c") || k.hasSuffix("celsius") || ["c", "celsius", "metric", "°c"].contains(unitText) { unit = " Celsius" }
        if k.hasSuffix("_f") || k.hasSuffix("fahrenheit") || ["f", "fahrenheit", "imperial", "°f"].contains(unitText) { unit = " Fahrenheit" }
        let skyKeys = ["condition", "conditions", "sky", "summary", "description", "weather", "forecast"]
        let sky = members.first { skyKeys.contains($0.0.lowercased()) }?.1.string?.trimmed
        let placeFrom: ([(String, JSON)]) -> String? = { fields in
            fields.first { key, value in ToolIntent.placeNames.contains(key.lowercased()) && value.string?.trimmed.isEmpty == false }?.1.string?.trimmed
        }
        let place = placeFrom(members) ?? arguments?.object.flatMap(placeFrom)
        var sentence = "It's \(Arithmetic.format(degrees)) degree\(degrees == 1 ? "" : "s")\(unit)"
        if let sky, !sky.isEmpty {
            let plain = sky.allSatisfy { $0.isLetter || $0 == " " || $0 == "-" }
            sentence += " and " + quote(plain ? sky.lowercased() : sky, limit: 60)
        }
        if let place { sentence += " in " + quote(place, limit: 60) }
        return sentence + "."
    }

    /// A JSON value as words: a string as it is, a number as written, an object or array as JSON.
    private static func spoken(_ value: JSON) -> String {
        switch value {
        case .string(let s): quote(s, limit: 80)
        case .number(let n): Arithmetic.format(n)
        case .bool(let b): b ? "true" : "false"
        case .null: "none"
        default: quote(value.description, limit: 80)
        }
    }

    /// `text` ending as a sentence does.
    private static func sentenceEnd(_ text: String) -> String {
        guard let last = text.last else { return text }
        return ".!?…".contains(last) ? text : text + "."
    }

    // MARK: Text helpers

    /// Words as a person counts them: runs of letters or digits (with apostrophes and hyphens).
    static func countedWords(_ text: String) -> Int {
        text.split { $0.isWhitespace }.count { $0.contains { $0.isLetter || $0.isNumber } }
    }

    /// The first quoted span: "…", '…' (not an apostrophe inside a word), “…” or ‘…’.
    static func quoted(in text: String) -> String? {
        let chars = Array(text)
        let pairs: [(Character, Character)] = [("\"", "\""), ("“", "”"), ("‘", "’"), ("'", "'")]
        for (open, close) in pairs {
            guard let start = chars.indices.first(where: { chars[$0] == open && (open != "'" || $0 == 0 || !chars[$0 - 1].isLetter) }) else { continue }
            guard let end = chars.indices.first(where: { $0 > start && chars[$0] == close && (close != "'" || $0 + 1 == chars.count || !chars[$0 + 1].isLetter) }) else { continue }
            if end > start + 1 { return String(chars[(start + 1)..<end]) }
        }
        return nil
    }

    /// At most `limit` characters of `text` on one line, for quoting back.
    static func quote(_ text: String, limit: Int = 60) -> String {
        let line = text.split(whereSeparator: \.isNewline).joined(separator: " ").trimmed
        return line.count <= limit ? line : String(line.prefix(limit - 3)) + "..."
    }

    static func seconds(_ ms: Int) -> String {
        let tenths = (ms + 50) / 100
        return "\(tenths / 10).\(tenths % 10) seconds"
    }

    static func plural(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

    static func ordinal(_ n: Int) -> String {
        let suffix = (11...13).contains(n % 100) ? "th" : [1: "st", 2: "nd", 3: "rd"][n % 10] ?? "th"
        return "\(n)\(suffix)"
    }

    static func list(_ items: [String]) -> String {
        switch items.count {
        case 0: ""
        case 1: items[0]
        case 2: "\(items[0]) and \(items[1])"
        default: items.dropLast().joined(separator: ", ") + " and " + items.last!
        }
    }
}

extension StringProtocol {
    var trimmed: String {
        var s = Substring(self)
        while s.first?.isWhitespace == true { s.removeFirst() }
        while s.last?.isWhitespace == true { s.removeLast() }
        return String(s)
    }
}
