import JSON

/// A scripted conversation for `parley-load eval`: what the user says or types, when, and what the
/// server must have done in answer. One line a step, read top to bottom (docs/operations.md,
/// "Scripted evals", is the reference):
///
///     name Weather with a client tool
///     voice joe
///     session {"instructions": "Be brief.", "tools": [...]}
///     tool get_weather {"temperature_c": 18}
///     user says What is the weather in Paris?
///     expect tool get_weather with city=Paris
///     expect reply contains 18|eighteen
///     expect reply starts within 2000 ms
///     user interrupts after 800 ms en-gb+f3: Wait, actually I meant Rome.
///     pause 500 ms
///     user types Thank you.
///
/// An `expect` line belongs to the user turn above it and is judged when the run is over, so a
/// reply that a later interruption cuts is said of the turn it answers. Parsing is a pure
/// function of the text: it runs nothing and is unit-tested on its own.
struct EvalScript: Equatable {
    var name: String
    /// Members merged over the runner's default session (`EvalScript.defaultSession`) and sent in
    /// the opening `session.update`.
    var session: [(String, JSON)] = []
    /// What the runner answers when the model calls a tool: its output text, by tool name.
    var toolOutputs: [String: String] = [:]
    var steps: [Step] = []

    static func == (a: EvalScript, b: EvalScript) -> Bool {
        a.name == b.name && JSON.object(a.session) == JSON.object(b.session) && a.toolOutputs == b.toolOutputs && a.steps == b.steps
    }

    enum Step: Equatable {
        case turn(Turn)
        case pause(ms: Int)
        /// A `session` line after the first turn: sent as a `session.update` at that point.
        case update(JSON)
    }

    struct Turn: Equatable {
        enum Input: Equatable {
            /// Synthesised in `voice` before the run, streamed at real-time pace.
            case spoken(String, TurnTakingVoice)
            /// A WAV file (any rate, mono), streamed at real-time pace.
            case recorded(path: String)
            /// A user message item and `response.create`.
            case typed(String)
        }
        var input: Input
        /// For `user interrupts after N ms`: speech that starts N ms after the previous turn's
        /// reply began to play, over it.
        var overPreviousAfterMs: Int?
        var line: Int
        var expectations: [Expectation] = []
    }

    struct Expectation: Equatable {
        enum Kind: Equatable {
            /// The user's words as the server heard them contain one of the alternatives.
            case transcriptContains([String])
            case replyContains([String])
            case replyLacks([String])
            /// A call of the tool whose arguments hold every pair (values compared as words, or as numbers).
            case tool(String, [Argument])
            case noTool
            /// From the last word sent (or the typed message) to the reply's first audio or text.
            case replyStartsWithin(ms: Int)
            case replyCut
            case replyNotCut
            case noReply
            /// No response began before the user's last word (a pause taken for the end).
            case noEarlyReply
        }
        let kind: Kind
        let line: Int
        /// The line as written, less `expect `: the name of its test case.
        let text: String
    }

    struct Argument: Equatable {
        let key: String
        let value: String
    }

    struct Invalid: Error, Equatable, CustomStringConvertible {
        let line: Int
        let reason: String
        var description: String { "line \(line): \(reason)" }
    }

    /// The session every script starts from: spoken replies as pcm16 at 24 kHz, the server's turn
    /// detection with replies and interruptions on, the user's words transcribed, and the turn's
    /// timeline asked for where the server has it (other servers ignore `include`s they lack).
    static let defaultSession: [(String, JSON)] = [
        ("type", .string("realtime")),
        ("output_modalities", .array([.string("audio")])),
        ("audio", .object([
            ("input", .object([
                ("format", .object([("type", .string("audio/pcm")), ("rate", .int(24_000))])),
                ("transcription", .object([("model", .string("whisper-1"))])),
                ("turn_detection", .object([("type", .string("semantic_vad")), ("create_response", .bool(true)), ("interrupt_response", .bool(true))])),
            ])),
            ("output", .object([("format", .object([("type", .string("audio/pcm")), ("rate", .int(24_000))]))])),
        ])),
    ]

    /// The opening session: the script's members merged over the defaults, object into object.
    var openingSession: JSON { Self.merged(.object(Self.defaultSession), over: .object(session)) }

    /// `top` written over `base`: objects member by member, anything else replaced.
    static func merged(_ base: JSON, over top: JSON) -> JSON {
        guard case .object(var members) = base, case .object(let overrides) = top else { return top }
        for (key, value) in overrides {
            if let index = members.lastIndex(where: { $0.0 == key }) {
                members[index].1 = merged(members[index].1, over: value)
            } else {
                members.append((key, value))
            }
        }
        return .object(members)
    }

    /// Whether turns end by the server's detection (true unless the script sets `turn_detection` to null).
    var serverDetectsTurns: Bool { !(openingSession["audio"]?["input"]?["turn_detection"]?.isNull ?? false) }

    // MARK: Parsing

    /// Reads a script; `name` is used when it has no `name` line (the file's name, say).
    init(parsing text: String, name: String) throws(Invalid) {
        self.name = name
        var voice = TurnTakingVoice.enUS
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let line = raw.trimmed
            if line.isEmpty || line.hasPrefix("#") { continue }
            let (word, rest) = line.splitWord
            switch word {
            case "name":
                guard !rest.isEmpty else { throw Invalid(line: number, reason: "name needs a name") }
                self.name = rest
            case "voice":
                guard let chosen = TurnTakingVoice(rawValue: rest) else { throw Invalid(line: number, reason: Self.unknownVoice(rest)) }
                voice = chosen
            case "session":
                let json: JSON
                do { json = try JSON(parsing: rest) } catch { throw Invalid(line: number, reason: "session takes a JSON object: \(error)") }
                guard json.object != nil else { throw Invalid(line: number, reason: "session takes a JSON object, such as {\"instructions\": \"Be brief.\"}") }
                if steps.isEmpty { session = (Self.merged(.object(session), over: json).object) ?? [] } else { steps.append(.update(json)) }
            case "tool":
                let (tool, output) = rest.splitWord
                guard !tool.isEmpty, !output.isEmpty else { throw Invalid(line: number, reason: "tool takes a name and the output to answer with: tool get_weather {\"temperature_c\": 18}") }
                toolOutputs[tool] = output
            case "pause":
                guard let ms = Self.milliseconds(rest) else { throw Invalid(line: number, reason: "pause takes a duration: pause 800 ms, pause 1.5 s") }
                steps.append(.pause(ms: ms))
            case "user":
                steps.append(.turn(try Self.turn(rest, line: number, voice: voice, previous: lastTurn)))
            case "expect":
                guard let last = steps.lastIndex(where: { if case .turn = $0 { true } else { false } }), case .turn(var turn) = steps[last] else {
                    throw Invalid(line: number, reason: "expect comes after the user turn it is about")
                }
                turn.expectations.append(Expectation(kind: try Self.expectation(rest, line: number), line: number, text: rest))
                steps[last] = .turn(turn)
            default:
                throw Invalid(line: number, reason: "unknown step \"\(word)\" (name, voice, session, tool, user, pause, expect)")
            }
        }
        guard steps.contains(where: { if case .turn = $0 { true } else { false } }) else {
            throw Invalid(line: 0, reason: "the script has no user turn")
        }
    }

    /// The step just before, when it is a turn: what `user interrupts` speaks over.
    private var lastTurn: Turn? {
        if case .turn(let turn) = steps.last { return turn }
        return nil
    }

    private static func unknownVoice(_ name: String) -> String {
        "unknown voice \"\(name)\" (\(TurnTakingVoice.allCases.map(\.rawValue).joined(separator: ", ")))"
    }

    private static func turn(_ text: String, line: Int, voice: TurnTakingVoice, previous: Turn?) throws(Invalid) -> Turn {
        let (verb, rest) = text.splitWord
        switch verb {
        case "says":
            let (chosen, words) = try spoken(rest, line: line, voice: voice)
            return Turn(input: .spoken(words, chosen), line: line)
        case "plays":
            guard !rest.isEmpty else { throw Invalid(line: line, reason: "user plays takes a WAV file") }
            return Turn(input: .recorded(path: rest), line: line)
        case "types":
            guard !rest.isEmpty else { throw Invalid(line: line, reason: "user types takes the message") }
            return Turn(input: .typed(rest), line: line)
        case "interrupts":
            // interrupts after 800 ms [voice:] words
            let (after, tail) = rest.splitWord
            guard after == "after" else { throw Invalid(line: line, reason: "user interrupts after N ms [voice:] words") }
            let (amount, afterAmount) = tail.splitWord
            var duration = amount, words = afterAmount
            if !amount.hasSuffix("ms") && !amount.hasSuffix("s") {
                let (unit, remainder) = afterAmount.splitWord
                duration = amount + unit
                words = remainder
            }
            guard let ms = milliseconds(duration) else { throw Invalid(line: line, reason: "user interrupts after N ms: \"\(duration)\" is not a duration") }
            guard previous != nil else {
                throw Invalid(line: line, reason: "user interrupts comes right after the user turn whose reply it speaks over")
            }
            let (chosen, spokenWords) = try spoken(words, line: line, voice: voice)
            return Turn(input: .spoken(spokenWords, chosen), overPreviousAfterMs: ms, line: line)
        default:
            throw Invalid(line: line, reason: "user says, user plays, user types or user interrupts")
        }
    }

    /// "en-gb+f3: Hello" names its voice; "Hello" takes the script's.
    private static func spoken(_ text: String, line: Int, voice: TurnTakingVoice) throws(Invalid) -> (TurnTakingVoice, String) {
        var chosen = voice, words = text
        if let colon = text.firstIndex(of: ":"), !text[..<colon].contains(" ") {
            let name = String(text[..<colon])
            guard let named = TurnTakingVoice(rawValue: name) else { throw Invalid(line: line, reason: unknownVoice(name)) }
            chosen = named
            words = String(text[text.index(after: colon)...]).trimmed
        }
        guard !words.isEmpty else { throw Invalid(line: line, reason: "nothing to say") }
        guard spokenParts(words) != nil else { throw Invalid(line: line, reason: "a pause inside speech is written [pause 800 ms], between words") }
        return (chosen, words)
    }

    /// Speech with pauses inside one turn, "I was wondering [pause 800 ms] if you could help", as
    /// its parts and the quiet after each (0 after the last); nil when a marker is malformed or
    /// a part is empty.
    static func spokenParts(_ words: String) -> [(words: String, pauseMs: Int)]? {
        var parts: [(words: String, pauseMs: Int)] = []
        var rest = Substring(words)
        while let open = rest.firstIndex(of: "[") {
            guard let close = rest[open...].firstIndex(of: "]") else { return nil }
            let marker = rest[rest.index(after: open)..<close].trimmed
            guard marker.hasPrefix("pause "), let ms = milliseconds(String(marker.dropFirst("pause ".count))) else { return nil }
            let before = rest[..<open].trimmed
            guard !before.isEmpty else { return nil }
            parts.append((before, ms))
            rest = rest[rest.index(after: close)...]
        }
        let last = rest.trimmed
        guard !last.isEmpty else { return nil }
        parts.append((last, 0))
        return parts
    }

    private static func expectation(_ text: String, line: Int) throws(Invalid) -> Expectation.Kind {
        func alternatives(_ s: String) throws(Invalid) -> [String] {
            let parts = s.split(separator: "|").map { String($0).trimmed }.filter { !$0.isEmpty }
            guard !parts.isEmpty else { throw Invalid(line: line, reason: "expect … contains needs the words to look for") }
            return parts
        }
        let lowered = text.lowercased()
        for (prefix, make) in [("transcript contains ", Expectation.Kind.transcriptContains), ("reply contains ", Expectation.Kind.replyContains),
                               ("reply does not contain ", Expectation.Kind.replyLacks)] where lowered.hasPrefix(prefix) {
            return make(try alternatives(String(text.dropFirst(prefix.count))))
        }
        switch lowered {
        case "reply cut": return .replyCut
        case "reply not cut": return .replyNotCut
        case "no reply": return .noReply
        case "no early reply": return .noEarlyReply
        case "no tool": return .noTool
        default: break
        }
        if lowered.hasPrefix("reply starts within ") {
            guard let ms = milliseconds(String(lowered.dropFirst("reply starts within ".count))) else {
                throw Invalid(line: line, reason: "expect reply starts within N ms")
            }
            return .replyStartsWithin(ms: ms)
        }
        if lowered.hasPrefix("tool ") {
            let rest = String(text.dropFirst("tool ".count))
            let (name, tail) = rest.splitWord
            guard !name.isEmpty else { throw Invalid(line: line, reason: "expect tool NAME [with key=value, …]") }
            guard !tail.isEmpty else { return .tool(name, []) }
            let (with, pairs) = tail.splitWord
            guard with == "with", !pairs.isEmpty else { throw Invalid(line: line, reason: "expect tool NAME with key=value, key=value") }
            var arguments: [Argument] = []
            for pair in pairs.split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).trimmed }
                guard parts.count == 2, !parts[0].isEmpty else { throw Invalid(line: line, reason: "\"\(pair.trimmed)\" is not key=value") }
                arguments.append(Argument(key: parts[0], value: parts[1]))
            }
            return .tool(name, arguments)
        }
        throw Invalid(line: line, reason: "unknown expectation \"\(text)\" (transcript contains, reply contains, reply does not contain, tool, no tool, reply starts within, reply cut, reply not cut, no reply, no early reply)")
    }

    /// "800 ms", "800ms", "1.5 s", "2s" in milliseconds; nil for anything else (and for negatives).
    static func milliseconds(_ text: String) -> Int? {
        let compact = text.filter { $0 != " " }.lowercased()
        let (number, scale): (Substring, Double) = compact.hasSuffix("ms") ? (compact.dropLast(2), 1) : compact.hasSuffix("s") ? (compact.dropLast(), 1_000) : (Substring(compact), 1)
        guard let value = Double(number), value >= 0, value < 3_600_000 else { return nil }
        return Int((value * scale).rounded())
    }
}

extension String {
    fileprivate var trimmed: String {
        String(drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
    }

    /// The first word and the rest, trimmed.
    fileprivate var splitWord: (String, String) {
        let text = trimmed
        guard let space = text.firstIndex(where: { $0 == " " || $0 == "\t" }) else { return (text, "") }
        return (String(text[..<space]), String(text[space...]).trimmed)
    }
}

extension Substring {
    fileprivate var trimmed: String { String(self).trimmed }
}
