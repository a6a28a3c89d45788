import JSON
import Loop
import Models
import Server
import SessionEngine

/// What happened on one session, for the operator who is asked about it afterwards: its turns
/// (what the user said, what the agent answered, where the turn's milliseconds went, whether the
/// reply was cut and where, the tools it called and how long each took), its usage, its errors,
/// its resumes and how it ended (docs/operations.md, "Session reports").
///
/// Fed the session's facts as they happen (`observe`), by its driver, which makes one with
/// the session's first turn: an idle session pays a nil pointer. Bounded: at most `maxTurns`
/// turns (the latest kept), `maxTextBytes` of each text and `maxErrors` errors, so a session that
/// runs for hours keeps a report of a fixed size. Never a secret: the resume token events are
/// only counted, and no header or credential passes through here.
final class SessionReport {
    static let maxTurns = 200
    static let maxTextBytes = 2_000
    static let maxErrors = 20

    struct ToolCall {
        var name: String
        var callID: String
        var arguments: String
        var startedAt: UInt64
        var seconds: Double?
        /// For a call the server made on an MCP server: its label, and how the call failed, if it did.
        var server: String?
        var error: String?
    }

    struct Turn {
        /// The user's item, when a user item began the turn (speech or typed text).
        var itemID: String?
        var user: String?
        var responseID: String?
        /// The reply's items (a truncation names one).
        var replyItems: [String] = []
        var status: String?
        var reply = ""
        /// Where a barge-in cut the reply: the audio heard, in ms.
        var heardMs: Int?
        var stages: [TurnStage] = []
        var tools: [ToolCall] = []
        /// Fillers said while its tools ran.
        var fillers = 0
        var inputTokens = 0
        var outputTokens = 0
    }

    /// Why the session ended, when something other than its close said (a limit).
    var endReason: String?
    private(set) var turns: [Turn] = []
    private(set) var droppedTurns = 0
    private var errors: [EventError] = []
    private var errorCount = 0
    private var backchannels = 0
    private var resumes = 0
    private var audioOutMs = 0
    /// Who answered, on a call Parley placed.
    private var answeredBy: AnsweringMachineDetector.Verdict?

    /// Whether the user has said something since the last turn began: a response after it is
    /// the answer to that turn, a response without it (a client's `response.create`) a turn of
    /// its own.
    private var userWaiting = false

    /// What happened, as the report keeps it.
    func observe(_ fact: SessionFact, at now: UInt64) {
        switch fact {
        case .userItem(let itemID, let text):
            // A spoken turn's words follow as `transcript`; typed text is the turn's at once.
            if let text {
                if !text.isEmpty { beginTurn(itemID: itemID, user: text) }
            } else {
                beginTurn(itemID: itemID, user: nil)
            }
        case .transcript(let itemID, let text):
            if let index = turns.lastIndex(where: { $0.itemID == itemID }) { turns[index].user = Self.clipped(text) }
        case .responseBegan(let responseID, let itemID):
            if !userWaiting || turns.last?.responseID != nil { beginTurn(itemID: nil, user: nil) }
            userWaiting = false
            turns[turns.count - 1].responseID = responseID
            turns[turns.count - 1].replyItems.append(itemID)
        case .replyAudio(let milliseconds):
            audioOutMs += milliseconds
        case .replyCut(let itemID, let audioEndMs):
            if let index = turns.lastIndex(where: { $0.replyItems.contains(itemID) }) { turns[index].heardMs = audioEndMs }
        case .replyResumed(_, .backchannel):
            backchannels += 1
        case .toolCalled(let responseID, let callID, let name, let arguments):
            update(response: responseID) { turn in
                turn.tools.append(ToolCall(name: name, callID: callID, arguments: Self.clipped(arguments), startedAt: now))
            }
        case .toolReturned(let callID):
            for index in turns.indices.reversed() {
                guard let call = turns[index].tools.firstIndex(where: { $0.callID == callID && $0.seconds == nil }) else { continue }
                turns[index].tools[call].seconds = Double(now &- turns[index].tools[call].startedAt) / 1e9
                userWaiting = true
                break
            }
        case .mcpCallBegan(let responseID, let itemID, let label, let tool):
            update(response: responseID) { turn in
                turn.tools.append(ToolCall(name: tool, callID: itemID, arguments: "", startedAt: now, server: label))
            }
        case .mcpCallEnded(_, let itemID, let error):
            for index in turns.indices.reversed() {
                guard let call = turns[index].tools.firstIndex(where: { $0.callID == itemID && $0.seconds == nil }) else { continue }
                turns[index].tools[call].seconds = Double(now &- turns[index].tools[call].startedAt) / 1e9
                turns[index].tools[call].error = error
                break
            }
        case .fillerSaid(let responseID):
            // A filler for a client's function is a response of its own: it counts in the turn
            // whose tool it waited on, the last.
            if let index = turns.lastIndex(where: { $0.responseID == responseID }) ?? turns.indices.last { turns[index].fillers += 1 }
        case .responseEnded(let response):
            update(response: response.id) { turn in
                turn.status = response.status.rawValue
                turn.inputTokens = response.usage?.inputTokens ?? 0
                turn.outputTokens = response.usage?.outputTokens ?? 0
                let said = response.output.flatMap(\.content).compactMap { content -> String? in
                    switch content {
                    case .outputText(let text): text
                    case .outputAudio(let transcript): transcript
                    default: nil
                    }
                }
                turn.reply = Self.clipped(said.joined(separator: " "))
            }
        case .error(let error):
            errorCount += 1
            if errors.count < Self.maxErrors { errors.append(error) }
        case .sessionResumed:
            resumes += 1
        case .answeredBy(let verdict):
            answeredBy = verdict
        case .turnTimed(let itemID, let responseID, let stages):
            if let index = turns.lastIndex(where: { ($0.itemID != nil && $0.itemID == itemID) || ($0.responseID != nil && $0.responseID == responseID) }) {
                turns[index].stages = stages
            }
        default:
            break
        }
    }

    /// Whether `fact` begins what a report is about (a turn): the driver makes one then.
    static func begins(_ fact: SessionFact) -> Bool {
        switch fact {
        case .userItem, .responseBegan, .error, .sessionResumed, .answeredBy: true
        default: false
        }
    }

    private func beginTurn(itemID: String?, user: String?) {
        if let itemID, let last = turns.last, last.itemID == itemID {
            if let user { turns[turns.count - 1].user = Self.clipped(user) }
            return
        }
        if turns.count == Self.maxTurns {
            turns.removeFirst()
            droppedTurns += 1
        }
        turns.append(Turn(itemID: itemID, user: user.map(Self.clipped)))
        userWaiting = itemID != nil
    }

    private func update(response: String, _ change: (inout Turn) -> Void) {
        guard let index = turns.lastIndex(where: { $0.responseID == response }) else { return }
        change(&turns[index])
    }

    static func clipped(_ text: String) -> String {
        guard text.utf8.count > maxTextBytes else { return text }
        var out = ""
        for character in text {
            guard out.utf8.count + character.utf8.count <= maxTextBytes - 3 else { break }
            out.append(character)
        }
        return out + "..."
    }

    /// How the session ended, for the report's `ended`.
    struct Ending {
        var closeCode: Int
        var reason: String
        var seconds: Double
        var audioInSeconds: Double
    }

    /// The report as JSON (`object: "parley.session_report"`).
    func json(sessionID: String, tenant: String?, model: String, endpoint: String, startedAt: Int, ending: Ending) -> JSON {
        let inputTokens = turns.reduce(0) { $0 + $1.inputTokens }, outputTokens = turns.reduce(0) { $0 + $1.outputTokens }
        let answered: [(String, JSON)] = answeredBy.map { verdict in
            [("answered_by", .object([("answer", .string(verdict.answer.rawValue)), ("reason", .string(verdict.reason)),
                                      ("decided_after_ms", .int(verdict.afterMs))]))]
        } ?? []
        return .object([
            ("object", .string("parley.session_report")),
            ("id", .string(sessionID)),
            ("tenant", tenant.map(JSON.string) ?? .null),
            ("model", .string(model)),
            ("endpoint", .string(endpoint)),
            ("started_at", .int(startedAt)),
            ("duration_seconds", .number((ending.seconds * 1000).rounded() / 1000)),
            ("ended", .object([("code", .int(ending.closeCode)), ("reason", .string(ending.reason))])),
            ("usage", .object([
                ("input_tokens", .int(inputTokens)), ("output_tokens", .int(outputTokens)),
                ("audio_in_seconds", .number((ending.audioInSeconds * 100).rounded() / 100)),
                ("audio_out_seconds", .number(Double(audioOutMs) / 1000)),
            ])),
            ("turns", .array(turns.map(Self.json))),
            ("turns_dropped", .int(droppedTurns)),
            ("interruptions", .int(turns.filter { $0.heardMs != nil }.count)),
            ("backchannels", .int(backchannels)),
            ("resumes", .int(resumes)),
            ("errors", .array(errors.map { .object([("type", .string($0.type.rawValue)), ("code", .string($0.code)), ("message", .string($0.message))]) })),
            ("errors_total", .int(errorCount)),
        ] + answered)
    }

    private static func json(_ turn: Turn) -> JSON {
        var members: [(String, JSON)] = [
            ("item_id", turn.itemID.map(JSON.string) ?? .null),
            ("user", turn.user.map(JSON.string) ?? .null),
            ("response_id", turn.responseID.map(JSON.string) ?? .null),
            ("status", turn.status.map(JSON.string) ?? .null),
            ("reply", .string(turn.reply)),
            ("interrupted", .bool(turn.heardMs != nil)),
        ]
        if let heard = turn.heardMs { members.append(("heard_ms", .int(heard))) }
        members.append(("stages_ms", .object(turn.stages.map { ($0.name, .int($0.milliseconds)) })))
        members.append(("tool_calls", .array(turn.tools.map { call in
            var fields: [(String, JSON)] = [("name", .string(call.name)), ("call_id", .string(call.callID)), ("arguments", .string(call.arguments)),
                                            ("seconds", call.seconds.map { .number(($0 * 1000).rounded() / 1000) } ?? .null)]
            if let server = call.server { fields += [("mcp_server", .string(server)), ("error", call.error.map(JSON.string) ?? .null)] }
            return .object(fields)
        })))
        members.append(("fillers", .int(turn.fillers)))
        members.append(("usage", .object([("input_tokens", .int(turn.inputTokens)), ("output_tokens", .int(turn.outputTokens))])))
        return .object(members)
    }
}
