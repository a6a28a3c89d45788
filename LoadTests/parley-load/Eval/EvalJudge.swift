import JSON

/// What one user turn of an eval got from the server, read from the session's events after the
/// run: the words heard, the responses that answered it, and how soon the first began.
struct EvalObservation: Equatable {
    struct Reply: Equatable {
        /// `response.done`'s status ("completed", "cancelled", "failed"…), or nil if it never came.
        var status: String?
        /// The reply's words: its audio transcripts and texts, in order.
        var text: String
        var toolCalls: [ToolCall]
    }

    struct ToolCall: Equatable {
        let name: String
        let arguments: JSON
    }

    /// The user's words as the server transcribed them (the typed text for a typed turn); nil when
    /// no transcript came.
    var heard: String?
    /// The responses created from the user's last word on, until the next user turn began.
    var replies: [Reply] = []
    /// Responses created after the turn began but before its last word: a pause taken for the end.
    var earlyReplies = 0
    /// From the last word (or the typed message) to the first reply's first audio or text delta.
    var replyStartMs: Double?
    /// Why the turn did not run as written (no reply to speak over, the connection ended…).
    var problem: String?
}

/// One expectation judged: passed or not, and what was seen, which the report prints either way.
struct EvalVerdict: Equatable {
    let expectation: EvalScript.Expectation
    let passed: Bool
    let detail: String
}

/// Judges expectations against observations; a pure function, tested without a server.
enum EvalJudge {
    static func judge(_ expectation: EvalScript.Expectation, _ seen: EvalObservation) -> EvalVerdict {
        if let problem = seen.problem { return EvalVerdict(expectation: expectation, passed: false, detail: problem) }
        let replyText = seen.replies.map(\.text).filter { !$0.isEmpty }.joined(separator: " ")
        let calls = seen.replies.flatMap(\.toolCalls)
        let (passed, detail): (Bool, String)
        switch expectation.kind {
        case .transcriptContains(let alternatives):
            guard let heard = seen.heard else { return EvalVerdict(expectation: expectation, passed: false, detail: "no transcript of the user's words came") }
            (passed, detail) = (alternatives.contains { contains(heard, $0) }, "heard \"\(heard)\"")
        case .replyContains(let alternatives):
            (passed, detail) = (alternatives.contains { contains(replyText, $0) }, said(seen, replyText))
        case .replyLacks(let alternatives):
            (passed, detail) = (!alternatives.contains { contains(replyText, $0) }, said(seen, replyText))
        case .tool(let name, let arguments):
            let matching = calls.contains { call in call.name == name && arguments.allSatisfy { matches(call.arguments, $0) } }
            (passed, detail) = (matching, calls.isEmpty ? "no tool was called" : "called " + calls.map { "\($0.name)(\($0.arguments.description))" }.joined(separator: ", "))
        case .noTool:
            (passed, detail) = (calls.isEmpty, calls.isEmpty ? "no tool was called" : "called " + calls.map(\.name).joined(separator: ", "))
        case .replyStartsWithin(let ms):
            guard let start = seen.replyStartMs else { return EvalVerdict(expectation: expectation, passed: false, detail: "no reply audio or text came") }
            (passed, detail) = (start <= Double(ms), "the reply began \(Int(start.rounded())) ms after the user's last word")
        case .replyCut:
            (passed, detail) = (seen.replies.contains { $0.status == "cancelled" }, statuses(seen))
        case .replyNotCut:
            (passed, detail) = (!seen.replies.isEmpty && seen.replies.allSatisfy { $0.status == "completed" }, statuses(seen))
        case .noReply:
            (passed, detail) = (seen.replies.isEmpty, seen.replies.isEmpty ? "no response began" : said(seen, replyText))
        case .noEarlyReply:
            (passed, detail) = (seen.earlyReplies == 0, seen.earlyReplies == 0 ? "no response began before the last word" : "\(seen.earlyReplies) response(s) began before the user's last word")
        }
        return EvalVerdict(expectation: expectation, passed: passed, detail: detail)
    }

    private static func said(_ seen: EvalObservation, _ text: String) -> String {
        seen.replies.isEmpty ? "no response began" : "replied \"\(text)\""
    }

    private static func statuses(_ seen: EvalObservation) -> String {
        seen.replies.isEmpty ? "no response began" : "response(s) " + seen.replies.map { $0.status ?? "never done" }.joined(separator: ", ")
    }

    /// Lower-cased words of letters and digits, numbers in digits: "What's twelve times 7?" is
    /// ["what", "s", "12", "times", "7"]. Recognisers write a number either way ("12 times seven"),
    /// so both sides are folded alike before they are compared.
    static func words(_ text: String) -> [String] {
        NumberWords.fold(text.lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init))
    }

    /// Whether `needle`'s words stand together, in order, among `haystack`'s.
    static func contains(_ haystack: String, _ needle: String) -> Bool {
        let hay = words(haystack), want = words(needle)
        guard !want.isEmpty, want.count <= hay.count else { return false }
        return (0...(hay.count - want.count)).contains { Array(hay[$0..<($0 + want.count)]) == want }
    }

    /// A call's argument against `key=value`: numbers compared as numbers ("2" is 2.0), anything
    /// else as words ("new york" is "New York"); a dotted key reaches into objects ("place.city").
    static func matches(_ arguments: JSON, _ wanted: EvalScript.Argument) -> Bool {
        var value: JSON? = arguments
        for part in wanted.key.split(separator: ".") { value = value?[String(part)] }
        guard let value else { return false }
        switch value {
        case .number(let n): return Double(wanted.value) == n
        case .string(let s): return words(s) == words(wanted.value)
        case .bool(let b): return wanted.value.lowercased() == (b ? "true" : "false")
        default: return words(value.description) == words(wanted.value)
        }
    }
}
