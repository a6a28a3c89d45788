import JSON
import Loop
import Upstream

/// Any OpenAI-compatible `/chat/completions` endpoint with `stream: true`: OpenAI, vLLM, the
/// llama.cpp server, Ollama, LM Studio, `parley mock-llm`.
public struct OpenAIChatModel: LanguageModel {
    public let name = "openai"
    /// Up to and including the version segment, e.g. `http://127.0.0.1:11434/v1`.
    public let baseURL: UpstreamURL
    public let model: String
    public let apiKey: String?
    public let timeouts: HTTPClientRequest.Timeouts

    public init(baseURL: UpstreamURL, model: String, apiKey: String?, timeouts: HTTPClientRequest.Timeouts = .init()) {
        apiKey.map(Secrets.register)
        self.baseURL = baseURL
        self.model = model
        self.apiKey = apiKey
        self.timeouts = timeouts
    }

    public func stream(_ request: ModelRequest, on loop: EventLoop, _ onEvent: @escaping (ModelEvent) -> Void) -> any ModelCall {
        var headers = [("Content-Type", "application/json"), ("Accept", "text/event-stream")]
        if let apiKey { headers.append(("Authorization", "Bearer \(apiKey)")) }
        if let traceparent = request.traceparent { headers.append(("traceparent", traceparent)) }
        var http = HTTPClientRequest(method: "POST", url: baseURL.appending("/chat/completions"), headers: headers,
                                     body: Array(body(request).description.utf8))
        http.timeouts = timeouts
        return UpstreamModelCall(http, on: loop, decode: Self.decode, onEvent: onEvent)
    }

    /// The request's JSON: the conversation, and the functions with `tool_choice` when it has any.
    func body(_ request: ModelRequest) -> JSON {
        var body: [(String, JSON)] = [
            ("model", .string(model)),
            ("messages", .array(Self.messages(request.messages))),
            ("stream", .bool(true)),
            ("stream_options", .object([("include_usage", .bool(true))])),
        ]
        if let limit = request.maxOutputTokens { body.append(("max_tokens", .int(limit))) }
        if let tools = request.tools?.tools, !tools.isEmpty {
            body.append(("tools", .array(tools.map { tool in
                var function: [(String, JSON)] = [("name", .string(tool.name))]
                if let description = tool.description { function.append(("description", .string(description))) }
                function.append(("parameters", tool.parameters))
                return .object([("type", .string("function")), ("function", .object(function))])
            })))
            body.append(("tool_choice", Self.toolChoice(request.toolChoice)))
        }
        return .object(body)
    }

    /// `tool_choice` as chat completions write it (a named function nests its name).
    static func toolChoice(_ choice: ToolChoice) -> JSON {
        switch choice {
        case .auto: .string("auto")
        case .none: .string("none")
        case .required, .mcp: .string("required")
        case .function(let name): .object([("type", .string("function")), ("function", .object([("name", .string(name))]))])
        }
    }

    /// The conversation as chat messages. The session keeps each function call as an assistant
    /// message of its own; the API wants a reply's calls in one assistant message (with the
    /// reply's text, if any), the results following it. So a message with calls joins the
    /// assistant message before it. A result must answer a call made before it: one whose call
    /// is not in the conversation (trimmed from the history) is left out, as the API would
    /// refuse the request.
    static func messages(_ messages: [ChatMessage]) -> [JSON] {
        var out: [JSON] = []
        out.reserveCapacity(messages.count)
        var called: Set<String> = []
        // The assistant message being gathered, which calls that follow it may still join.
        var open: (text: String, calls: [ToolCall])?
        func close() {
            guard let (text, calls) = open else { return }
            open = nil
            guard !calls.isEmpty else { return out.append(.object([("role", .string("assistant")), ("content", .string(text))])) }
            out.append(.object([
                ("role", .string("assistant")),
                ("content", text.isEmpty ? .null : .string(text)),
                ("tool_calls", .array(calls.map { call in
                    .object([
                        ("id", .string(call.id)),
                        ("type", .string("function")),
                        ("function", .object([("name", .string(call.name)), ("arguments", .string(call.arguments))])),
                    ])
                })),
            ]))
        }
        for message in messages {
            switch message.role {
            case .assistant:
                for call in message.toolCalls { called.insert(call.id) }
                if var joined = open, !message.toolCalls.isEmpty {
                    if !message.text.isEmpty { joined.text += joined.text.isEmpty ? message.text : "\n\n" + message.text }
                    joined.calls += message.toolCalls
                    open = joined
                } else {
                    close()
                    open = (message.text, message.toolCalls)
                }
            case .tool:
                guard let id = message.toolCallID, called.contains(id) else { continue }
                close()
                out.append(.object([("role", .string("tool")), ("tool_call_id", .string(id)), ("content", .string(message.text))]))
            case .system, .user:
                close()
                out.append(.object([("role", .string(message.role.rawValue)), ("content", .string(message.text))]))
            }
        }
        close()
        return out
    }

    /// One chunk: `data: {"choices":[{"delta":{"content":"…"}}]}`, a usage chunk, or `[DONE]`.
    /// The last choice chunk says why the model stopped (`finish_reason`: `stop`, `tool_calls`,
    /// or `length` at the token limit); some servers put text in that chunk too.
    ///
    /// Function calls come as `delta.tool_calls`, pieces of calls by `index`: a call's first piece
    /// has its `id` and `function.name`, and any piece may carry some of `function.arguments`.
    /// One chunk may hold pieces of several calls, and text. Some OpenAI-compatible servers stray
    /// from this, and are followed where that is unambiguous: a piece without an `index` is a new
    /// call if it has an id, else more of the call last started; a new id on a known index is a
    /// new call (servers that number every call 0).
    static func decode(_ event: ServerSentEventParser.Event, _ ending: inout UpstreamModelCall.Ending) -> UpstreamModelCall.DecodeResult {
        if event.data == "[DONE]" { return .done }
        guard let chunk = try? JSON(parsing: event.data) else {
            return .failed(ModelError(code: "upstream_error", message: "the upstream sent an event that is not JSON"))
        }
        if let message = chunk["error"]?["message"]?.string { return .failed(ModelError(code: "upstream_error", message: message)) }
        if let reported = chunk["usage"], let prompt = reported["prompt_tokens"]?.int, let completion = reported["completion_tokens"]?.int {
            ending.usage = Usage(inputTokens: prompt, outputTokens: completion)
        }
        guard let choice = chunk["choices"]?.array?.first else { return .nothing }
        switch choice["finish_reason"]?.string {
        case "length": ending.reason = .length
        case "tool_calls", "function_call": ending.reason = .toolCalls
        default: break
        }
        var events: [ModelEvent] = []
        if let text = choice["delta"]?["content"]?.string, !text.isEmpty { events.append(.delta(text)) }
        guard let calls = choice["delta"]?["tool_calls"], !calls.isNull else { return .events(events) }
        guard let pieces = calls.array else { return .failed(malformed("delta.tool_calls is not an array")) }
        for piece in pieces {
            guard case .object = piece else { return .failed(malformed("a delta.tool_calls entry is not an object")) }
            let upstreamIndex: Int?
            switch piece["index"] {
            case nil, .null?: upstreamIndex = nil
            case let value?:
                guard let number = value.int else { return .failed(malformed("a tool call's index is not a whole number")) }
                upstreamIndex = number
            }
            let id = piece["id"]?.string.flatMap { $0.isEmpty ? nil : $0 }
            let function = piece["function"]
            // The call this piece continues, unless it starts one.
            let continued: Int? = if let upstreamIndex { ending.toolCallIndexes[upstreamIndex] }
                            else if id == nil { ending.toolCallIDs.indices.last } else { nil }
            let index: Int
            if let continued, id == nil || id == ending.toolCallIDs[continued] {
                index = continued
            } else {
                let named = upstreamIndex.map { "tool call \($0)" } ?? "a tool call without an index"
                guard let id else { return .failed(malformed("\(named) began without an id")) }
                guard let name = function?["name"]?.string, !name.isEmpty else { return .failed(malformed("\(named) began without a function name")) }
                index = ending.startToolCall(upstreamIndex, id: id)
                events.append(.toolCallStarted(index: index, id: id, name: name))
            }
            switch function?["arguments"] {
            case nil, .null?: break
            case .string(let text)?: if !text.isEmpty { events.append(.toolCallArgumentsDelta(index: index, text)) }
            // A few servers send the arguments whole, as an object rather than its text.
            case .object(let members)?: events.append(.toolCallArgumentsDelta(index: index, JSON.object(members).description))
            default: return .failed(malformed("the arguments of tool call \(upstreamIndex ?? index) are not a string"))
            }
        }
        return .events(events)
    }

    private static func malformed(_ problem: String) -> ModelError {
        ModelError(code: "upstream_error", message: "the upstream sent a malformed function call: \(problem)")
    }
}
