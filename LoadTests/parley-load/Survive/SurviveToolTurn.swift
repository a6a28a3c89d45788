/// A text turn that asks for the weather, answered as a client that runs the tool would: the
/// model's call arrives in a `response.done`, the client adds a `function_call_output` for each
/// call and asks for the next response, and the turn ends at the first `response.done` without a
/// call. A value (events in, messages to send out), so that what a resume must send again is a
/// unit test.
///
/// The rule across a drop: an output counts as the server's once its `conversation.item.added`
/// or `.done` came (live, or in the replay after `session.resumed`). The replay holds every event
/// the server sent after our `last_seq`, and the store keeps every `conversation.item.done`, so
/// an output still unacknowledged when the replay is over never reached the server and is sent
/// again; one acknowledged is never sent twice.
struct SurviveToolTurn: Equatable {
    struct Call: Equatable {
        let callID: String
        /// Our own id for its `function_call_output` item, so that its acknowledgement is known.
        let outputID: String
        var sent = false
        var sentBefore = false
        var acknowledged = false
    }

    enum Step: Equatable {
        /// `again`: it went out before a drop, and the replay showed the server never had it.
        case sendOutput(callID: String, outputID: String, again: Bool)
        case createResponse
    }

    /// The mock calls get_weather once a round; more than this many calls in one turn is a model
    /// gone round in circles, and the turn ends rather than answering it forever.
    static let maxCalls = 8

    /// The start of every output id of this turn (`o<slot>t<turn>`), unique in the session.
    let outputPrefix: String
    private(set) var calls: [Call] = []
    /// A response.create went out after outputs, and no response.done has come since.
    private(set) var awaitingReply = false
    /// That response began (`response.created`): asking again would be refused.
    private(set) var replyBegan = false
    /// The model answered without a call: the turn is over.
    private(set) var finished = false
    /// More calls than `maxCalls`: the turn ended without answering the last ones.
    private(set) var gaveUp = false

    init(outputPrefix: String) {
        self.outputPrefix = outputPrefix
    }

    var answered: Int { calls.filter(\.acknowledged).count }

    /// A response of this turn ended with the `function_call` items' call ids `callIDs` (none: it
    /// answered in words). What to send next; nothing while `replaying` (the replay after a resume
    /// is not over: `resumed` sends it then).
    mutating func responseDone(callIDs: [String], replaying: Bool = false) -> [Step] {
        awaitingReply = false
        replyBegan = false
        guard !callIDs.isEmpty else {
            finished = true
            return []
        }
        for id in callIDs where !calls.contains(where: { $0.callID == id }) {
            guard calls.count < Self.maxCalls else {
                gaveUp = true
                finished = true
                return []
            }
            calls.append(Call(callID: id, outputID: "\(outputPrefix)c\(calls.count + 1)"))
        }
        return replaying ? [] : flush()
    }

    /// `response.created` while the turn waits for the reply to its outputs.
    mutating func responseCreated() {
        if awaitingReply { replyBegan = true }
    }

    /// An item the server added; true when it is one of our outputs (seen for the first time).
    mutating func acknowledged(_ itemID: String) -> Bool {
        guard let i = calls.firstIndex(where: { $0.outputID == itemID }), !calls[i].acknowledged else { return false }
        calls[i].acknowledged = true
        calls[i].sent = true
        return true
    }

    /// The replay after `session.resumed` is over: outputs it did not acknowledge are sent again,
    /// and a reply asked for that never began is asked for again.
    mutating func resumed() -> [Step] {
        guard !finished else { return [] }
        for i in calls.indices where calls[i].sent && !calls[i].acknowledged {
            calls[i].sent = false
            calls[i].sentBefore = true
        }
        let steps = flush()
        if steps.isEmpty, awaitingReply, !replyBegan { return [.createResponse] }
        return steps
    }

    /// Outputs not yet sent, then one response.create for them all.
    private mutating func flush() -> [Step] {
        var steps: [Step] = []
        for i in calls.indices where !calls[i].sent {
            calls[i].sent = true
            steps.append(.sendOutput(callID: calls[i].callID, outputID: calls[i].outputID, again: calls[i].sentBefore))
        }
        if !steps.isEmpty {
            steps.append(.createResponse)
            awaitingReply = true
            replyBegan = false
        }
        return steps
    }

    /// The output the client's tool gives for a call: the same for every call, so a reply's text
    /// is predictable.
    static let output = #"{\"city\":\"Paris\",\"temperature_c\":18,\"sky\":\"sunny\"}"#

    /// The user's words that make `parley mock-llm` call get_weather: it calls a declared tool
    /// whose name's words (but the verb "get") the prompt says (Models' ToolIntent).
    static func prompt(_ n: Int) -> String { "what is the weather in Paris, question \(n)" }

    /// The one function every session with tools declares.
    static let sessionTools = #""tools":[{"type":"function","name":"get_weather","description":"Gets the current weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name, such as Paris."}},"required":["city"]}}],"tool_choice":"auto""#
}
