import JSON
import Loop
import Upstream

/// Anthropic's Messages API with `stream: true`.
public struct AnthropicModel: LanguageModel {
    public let name = "anthropic"
    /// e.g. `https://api.anthropic.com/v1`.
    public let baseURL: UpstreamURL
    public let model: String
    public let apiKey: String?
    /// The API requires a cap on output tokens.
    public let defaultMaxTokens: Int
    public let timeouts: HTTPClientRequest.Timeouts

    public init(baseURL: UpstreamURL, model: String, apiKey: String?, defaultMaxTokens: Int = 1024, timeouts: HTTPClientRequest.Timeouts = .init()) {
        apiKey.map(Secrets.register)
        self.baseURL = baseURL
        self.model = model
        self.apiKey = apiKey
        self.defaultMaxTokens = defaultMaxTokens
        self.timeouts = timeouts
    }

    public func stream(_ request: ModelRequest, on loop: EventLoop, _ onEvent: @escaping (ModelEvent) -> Void) -> any ModelCall {
        var headers = [("Content-Type", "application/json"), ("Accept", "text/event-stream"), ("anthropic-version", "2023-06-01")]
        if let apiKey { headers.append(("x-api-key", apiKey)) }
        if let traceparent = request.traceparent { headers.append(("traceparent", traceparent)) }
        var http = HTTPClientRequest(method: "POST", url: baseURL.appending("/messages"), headers: headers,
                                     body: Array(body(request).description.utf8))
        http.timeouts = timeouts
        return UpstreamModelCall(http, on: loop, decode: Self.decode, onEvent: onEvent)
    }

    /// The request's JSON: the system text apart, the turns, and the functions with
    /// `tool_choice` when it has any.
    func body(_ request: ModelRequest) -> JSON {
        let system = request.messages.filter { $0.role == .system }.map(\.text).joined(separator: "\n\n")
        var body: [(String, JSON)] = [
            ("model", .string(model)),
            ("max_tokens", .int(request.maxOutputTokens ?? defaultMaxTokens)),
            ("messages", .array(Self.turns(request.messages))),
            ("stream", .bool(true)),
        ]
        if !system.isEmpty { body.append(("system", .string(system))) }
        if let tools = request.tools?.tools, !tools.isEmpty {
            body.append(("tools", .array(tools.map { tool in
                var fields: [(String, JSON)] = [("name", .string(tool.name))]
                if let description = tool.description { fields.append(("description", .string(description))) }
                fields.append(("input_schema", tool.parameters))
                return .object(fields)
            })))
            body.append(("tool_choice", Self.toolChoice(request.toolChoice)))
        }
        return .object(body)
    }

    /// `required` is `any` here; `none` keeps the tools in view but calls none.
    static func toolChoice(_ choice: ToolChoice) -> JSON {
        switch choice {
        case .auto: .object([("type", .string("auto"))])
        case .none: .object([("type", .string("none"))])
        case .required, .mcp: .object([("type", .string("any"))])
        case .function(let name): .object([("type", .string("tool")), ("name", .string(name))])
        }
    }

    /// One turn of the Messages API: its text, and the function calls (an assistant turn's
    /// `tool_use` blocks) or their results (a user turn's `tool_result` blocks) it carries.
    private struct Turn {
        var role: ChatMessage.Role
        var text: String
        var calls: [ToolCall] = []
        var results: [(id: String, text: String)] = []

        mutating func add(_ more: String) {
            if text.isEmpty { text = more } else if !more.isEmpty { text += "\n\n" + more }
        }

        /// Plain text when that is all the turn has; else blocks: text, then the calls, or
        /// the results, then text (the API wants results first).
        var json: JSON {
            guard !calls.isEmpty || !results.isEmpty else { return .object([("role", .string(role.rawValue)), ("content", .string(text))]) }
            var blocks: [JSON] = []
            let textBlock = JSON.object([("type", .string("text")), ("text", .string(text))])
            if role == .assistant && !text.isEmpty { blocks.append(textBlock) }
            for call in calls {
                // The API takes the arguments as an object: none, or ones that are not one, are {}.
                let input: JSON = if let parsed = try? JSON(parsing: call.arguments), parsed.object != nil { parsed } else { .object([]) }
                blocks.append(.object([("type", .string("tool_use")), ("id", .string(call.id)), ("name", .string(call.name)), ("input", input)]))
            }
            for result in results {
                blocks.append(.object([("type", .string("tool_result")), ("tool_use_id", .string(result.id)), ("content", .string(result.text))]))
            }
            if role == .user && !text.isEmpty { blocks.append(textBlock) }
            return .object([("role", .string(role.rawValue)), ("content", .array(blocks))])
        }
    }

    /// The Messages API wants user and assistant turns alternating, starting with the user:
    /// consecutive messages of one role are joined, and a leading assistant turn is dropped.
    /// Function results are user turns (joining one with any user text next to them); each must
    /// answer a call of the assistant turn just before it, so a result whose call is not there
    /// (its turn dropped, or trimmed from the history) is left out, as the API would refuse it.
    static func turns(_ messages: [ChatMessage]) -> [JSON] {
        var turns: [Turn] = []
        for message in messages where message.role != .system {
            let role: ChatMessage.Role = message.role == .assistant ? .assistant : .user
            if turns.isEmpty && role == .assistant { continue }
            if message.role == .tool {
                let callers = turns.last?.role == .assistant ? turns.last : turns.count > 1 ? turns[turns.count - 2] : nil
                guard let id = message.toolCallID, callers?.calls.contains(where: { $0.id == id }) == true else { continue }
            }
            if turns.last?.role != role { turns.append(Turn(role: role, text: "")) }
            switch message.role {
            case .tool: turns[turns.count - 1].results.append((message.toolCallID ?? "", message.text))
            default:
                turns[turns.count - 1].add(message.text)
                turns[turns.count - 1].calls += message.toolCalls
            }
        }
        return turns.map(\.json)
    }

    /// One event of the stream. `message_delta` carries the output usage and why the model stopped
    /// (`stop_reason`: `end_turn`, `tool_use` after function calls, or `max_tokens` at the token
    /// limit). A function call is a `tool_use` content block: its start names the call, and its
    /// arguments come as `input_json_delta`s of that block.
    static func decode(_ event: ServerSentEventParser.Event, _ ending: inout UpstreamModelCall.Ending) -> UpstreamModelCall.DecodeResult {
        guard let data = try? JSON(parsing: event.data) else {
            return .failed(ModelError(code: "upstream_error", message: "the upstream sent an event that is not JSON"))
        }
        switch data["type"]?.string ?? event.name {
        case "content_block_start":
            guard let block = data["content_block"], block["type"]?.string == "tool_use" else { return .nothing }
            guard let blockIndex = data["index"]?.int else { return .failed(malformed("a tool_use block without an index")) }
            guard let id = block["id"]?.string, !id.isEmpty else { return .failed(malformed("tool_use block \(blockIndex) has no id")) }
            guard let name = block["name"]?.string, !name.isEmpty else { return .failed(malformed("tool_use block \(blockIndex) has no name")) }
            return .events([.toolCallStarted(index: ending.startToolCall(blockIndex, id: id), id: id, name: name)])
        case "content_block_delta":
            guard data["delta"]?["type"]?.string == "input_json_delta" else {
                return data["delta"]?["text"].flatMap(\.string).map { .events([.delta($0)]) } ?? .nothing
            }
            guard let blockIndex = data["index"]?.int, let index = ending.toolCallIndexes[blockIndex] else {
                return .failed(malformed("arguments for content block \(data["index"]?.description ?? "(none)"), which is no tool_use block"))
            }
            guard let piece = data["delta"]?["partial_json"]?.string else { return .failed(malformed("an input_json_delta without partial_json")) }
            return piece.isEmpty ? .nothing : .events([.toolCallArgumentsDelta(index: index, piece)])
        case "message_start":
            ending.usage = Usage(inputTokens: data["message"]?["usage"]?["input_tokens"]?.int ?? 0, outputTokens: 0)
            return .nothing
        case "message_delta":
            if let output = data["usage"]?["output_tokens"]?.int { ending.usage = Usage(inputTokens: ending.usage?.inputTokens ?? 0, outputTokens: output) }
            switch data["delta"]?["stop_reason"]?.string {
            case "max_tokens": ending.reason = .length
            case "tool_use": ending.reason = .toolCalls
            default: break
            }
            return .nothing
        case "message_stop":
            return .done
        case "error":
            return .failed(ModelError(code: "upstream_error", message: data["error"]?["message"]?.string ?? "the upstream reported an error"))
        default:
            return .nothing
        }
    }

    private static func malformed(_ problem: String) -> ModelError {
        ModelError(code: "upstream_error", message: "the upstream sent a malformed function call: \(problem)")
    }
}
