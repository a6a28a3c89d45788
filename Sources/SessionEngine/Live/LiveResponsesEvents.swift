import JSON

/// What a Live session's Responses backend says, as the client sees it: the backend session's
/// engine events turned into the Responses API's streaming events (for `response.event`
/// envelopes), and the outcome of each response: an answer for the voice front to speak, or
/// function calls the application is to answer.
///
/// The Realtime API's response events and the Responses API's share their names and fields
/// (`response.output_text.delta`, `response.function_call_arguments.done`,
/// `response.output_item.added`, `response.mcp_call.completed`, …): those are forwarded with
/// `sequence_number` for `event_id`; `response.done` is `response.completed` (or `.failed`,
/// `.incomplete`), the response object `"object": "response"`.
package struct LiveResponsesEvents: Sendable {
    package enum Outcome: Sendable, Equatable {
        /// A Responses streaming event for the client.
        case event(JSON)
        /// The response finished with this text and no function call: the front says it.
        case answered(String)
        /// The response failed, or the backend refused a command: said to the client.
        case error(EventError)
        /// The response ended on MCP calls' results, which the model has not yet answered: the
        /// backend asks it again (the Responses API's model goes on by itself).
        case continues
    }

    private var sequence = 0
    /// The current response's text and whether it called a function.
    private var text = ""
    private var calledFunction = false
    private var calledServer = false

    package init() {}

    package mutating func translate(_ event: ServerEvent) -> [Outcome] {
        switch event.kind {
        case .responseCreated:
            text = ""
            calledFunction = false
            calledServer = false
            return [.event(forward(event, as: "response.created"))]
        case .outputTextDelta(_, let delta), .outputAudioTranscriptDelta(_, let delta):
            text += delta
            return [.event(forward(event))]
        case .functionCallArgumentsDone:
            calledFunction = true
            return [.event(forward(event))]
        case .mcpCallCompleted, .mcpCallFailed:
            calledServer = true
            return [.event(forward(event))]
        case .outputItemAdded, .outputItemDone, .contentPartAdded, .contentPartDone, .outputTextDone, .functionCallArgumentsDelta,
             .mcpCallArgumentsDelta, .mcpCallArgumentsDone, .mcpCallInProgress:
            return [.event(forward(event))]
        case .mcpListToolsInProgress, .mcpListToolsCompleted, .mcpListToolsFailed:
            // The Realtime API's `mcp_list_tools.*` is the Responses API's `response.mcp_list_tools.*`.
            return [.event(forward(event, as: "response." + event.type(in: .ga)))]
        case .responseDone(let response):
            let type = switch response.status {
            case .completed: "response.completed"
            case .failed: "response.failed"
            default: "response.incomplete"
            }
            var outcomes: [Outcome] = [.event(forward(event, as: type))]
            if case .failed(let error) = response.statusDetails { outcomes.append(.error(error)) }
            let answer = text.trimmed
            if response.status == .completed, !calledFunction {
                if !answer.isEmpty { outcomes.append(.answered(answer)) } else if calledServer { outcomes.append(.continues) }
            }
            return outcomes
        case .error(let error):
            return [.error(error)]
        default:
            return []
        }
    }

    /// The event's Realtime JSON as a Responses event: `type` (renamed when given), no `event_id`,
    /// a `sequence_number`, and a response object that says it is one.
    private mutating func forward(_ event: ServerEvent, as type: String? = nil) -> JSON {
        guard case .object(let members) = event.jsonValue(dialect: .ga) else { return .object([]) }
        var out: [(String, JSON)] = []
        for (key, value) in members where key != "event_id" {
            switch key {
            case "type": out.append(("type", .string(type ?? value.string ?? "")))
            case "response": out.append(("response", Self.responseObject(value)))
            default: out.append((key, value))
            }
        }
        out.append(("sequence_number", .int(sequence)))
        sequence += 1
        return .object(out)
    }

    private static func responseObject(_ value: JSON) -> JSON {
        guard case .object(let members) = value else { return value }
        return .object(members.map { $0.0 == "object" ? ("object", .string("response")) : $0 })
    }
}
