import JSON
import Models
import Server
import Loop

/// `parley mock-llm`: an OpenAI-compatible chat-completions server (and Anthropic's Messages API)
/// that streams a made-up reply at a configured pace, with injectable faults. It runs on Parley's
/// own event loops; tests and load tests use it instead of a paid API.
public enum MockLLMServer {
    public static func install(on routes: inout Router.Builder, options: MockLLMOptions) {
        routes.stream("POST", "/v1/chat/completions") { request, stream in
            MockReply(request: request, stream: stream, defaults: options, format: .openAI).run()
        }
        routes.stream("POST", "/v1/messages") { request, stream in
            MockReply(request: request, stream: stream, defaults: options, format: .anthropic).run()
        }
        routes.get("/v1/models") { _ in
            HTTPResponse(status: .ok, contentType: "application/json",
                         body: #"{"object":"list","data":[{"id":"parley-mock","object":"model","owned_by":"parley"}]}"#)
        }
    }
}

/// One streamed reply, paced by the loop's timers. Its pending timer keeps it alive; when the
/// client leaves, the stream's close handler cancels the timer and so lets it go.
///
/// A reply is a list of pieces, each one event of the stream at the configured pace: words of
/// text, and for a reply that calls tools (see `MockTools.swift`) each call's start and the pieces
/// of its arguments.
final class MockReply {
    enum Format { case openAI, anthropic }

    enum Piece {
        /// Text, with its leading space.
        case text(String)
        /// The start of call `i` (its id and name).
        case call(Int)
        /// A piece of call `i`'s arguments text.
        case arguments(Int, String)
    }

    let request: HTTPRequest
    let stream: HTTPResponseStream
    let format: Format
    private var options: MockLLMOptions
    private var pieces: [Piece] = []
    private var calls: [MockToolCall] = []
    private var sent = 0
    private var promptTokens = 0
    private var model = "parley-mock"
    private var includeUsage = false
    private var pending: ScheduledTask?
    /// Anthropic: the index of the open content block, and how many have been started.
    private var openBlock: Int?
    private var blocks = 0

    init(request: HTTPRequest, stream: HTTPResponseStream, defaults: MockLLMOptions, format: Format) {
        self.request = request
        self.stream = stream
        self.format = format
        options = defaults
        if let fault = request.header("x-mock-fault").flatMap(MockFault.init(rawValue:)) { options.fault = fault }
        if let n = request.header("x-mock-tokens").flatMap(Int.init), n >= 0 { options.replyTokens = min(n, 100_000) }
        if let ms = request.header("x-mock-first-token-ms").flatMap(Double.init), ms >= 0 { options.timeToFirstToken = ms / 1000 }
        if let rate = request.header("x-mock-tokens-per-second").flatMap(Double.init), rate > 0 { options.tokensPerSecond = rate }
    }

    func run() {
        guard let body = try? JSON(parsing: String(decoding: request.body, as: UTF8.self)), body.object != nil else {
            return fail(.badRequest, type: "invalid_request_error", "the request body is not a JSON object")
        }
        guard let messages = body["messages"]?.array, !messages.isEmpty else {
            return fail(.badRequest, type: "invalid_request_error", "'messages' must be a non-empty array")
        }
        let tools: MockToolRequest
        let results: [MockToolResult]?
        do throws(MockBadRequest) {
            tools = try MockToolRequest(body: body, format: format)
            results = try MockToolResult.trailing(messages, format: format)
        } catch {
            return fail(.badRequest, type: "invalid_request_error", error.message)
        }
        model = body["model"]?.string ?? model
        includeUsage = body["stream_options"]?["include_usage"]?.bool ?? false
        let texts = messages.map(Self.text)
        promptTokens = texts.reduce(0) { $0 + $1.split(separator: " ").count } + (body["system"]?.string?.split(separator: " ").count ?? 0)
        plan(tools: tools, results: results, last: messages[messages.count - 1], prompt: texts.last ?? "")
        switch options.fault {
        case .serverError: return fail(.internalServerError, type: "server_error", "injected fault: internal error")
        case .rateLimited: return fail(.tooManyRequests, type: "rate_limit_error", "injected fault: rate limited", retryAfter: true)
        default: break
        }
        guard body["stream"]?.bool == true else { return respondWhole() }
        stream.start(.ok, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")])
        stream.onClose = { [weak self] in self?.pending?.cancel() }
        if format == .anthropic { sendAnthropicStart() }
        pending = stream.loop.schedule(after: options.timeToFirstToken) { self.sendNext() }
    }

    /// What to answer: text that uses the tool results the conversation ends with; calls to the
    /// tools the user's last message names (after a few words if it asks for them); or made-up text.
    private func plan(tools: MockToolRequest, results: [MockToolResult]?, last: JSON, prompt: String) {
        if let results {
            pieces = Self.textPieces(MockToolResult.answer(results).split(separator: " ").map(String.init))
            return
        }
        let chosen = last["role"]?.string == "user" ? tools.calls(for: prompt) : []
        guard !chosen.isEmpty else {
            pieces = Self.textPieces(Self.reply(to: prompt, tokens: options.replyTokens))
            return
        }
        calls = chosen.map { tool in
            MockToolCall(id: MockToolCall.id(prefix: format == .openAI ? "call_" : "toolu_"), name: tool.name,
                         arguments: ToolIntent.arguments(for: tool.schema, prompt: prompt, avoiding: ToolName.words(of: tool.name)))
        }
        if MockToolMatcher.wantsPreamble(prompt) { pieces = Self.textPieces(["Let", "me", "check", "that."]) }
        for (i, call) in calls.enumerated() {
            pieces.append(.call(i))
            pieces += call.argumentPieces.map { .arguments(i, $0) }
        }
    }

    static func textPieces(_ words: [String]) -> [Piece] {
        words.enumerated().map { i, word in .text((i == 0 ? "" : " ") + word) }
    }

    /// The reply's text, all pieces of it.
    private var replyText: String {
        pieces.reduce(into: "") { text, piece in if case .text(let s) = piece { text += s } }
    }

    // MARK: Streaming

    private func sendNext() {
        guard stream.isOpen else { return }
        if sent < pieces.count {
            let piece = pieces[sent]
            sent += 1
            stream.write(format == .openAI ? openAIChunk(piece) : anthropicEvents(piece))
            if options.fault == .stall && sent == 1 { return }  // and never another byte
            if options.fault == .drop && sent == min(3, pieces.count) { return stream.abort() }
            pending = stream.loop.schedule(after: 1 / options.tokensPerSecond) { self.sendNext() }
            return
        }
        format == .openAI ? finishOpenAI() : finishAnthropic()
        stream.end()
    }

    private func openAIChunk(_ piece: Piece) -> String {
        var delta: [(String, JSON)] = []
        if sent == 1 { delta.append(("role", .string("assistant"))) }
        switch piece {
        case .text(let text):
            delta.append(("content", .string(text)))
        case .call(let i):
            if sent == 1 { delta.append(("content", .null)) }
            delta.append(("tool_calls", .array([.object([
                ("index", .int(i)), ("id", .string(calls[i].id)), ("type", .string("function")),
                ("function", .object([("name", .string(calls[i].name)), ("arguments", .string(""))])),
            ])])))
        case .arguments(let i, let text):
            delta.append(("tool_calls", .array([.object([("index", .int(i)), ("function", .object([("arguments", .string(text))]))])])))
        }
        return openAIChunk(delta: delta, finish: nil)
    }

    /// A chunk with one choice, or (`delta` nil) the usage chunk, whose choices are empty.
    private func openAIChunk(delta: [(String, JSON)]?, finish: String?) -> String {
        var fields: [(String, JSON)] = [("id", .string("chatcmpl-mock")), ("object", .string("chat.completion.chunk")),
                                        ("created", .int(0)), ("model", .string(model))]
        if let delta {
            fields.append(("choices", .array([.object([("index", .int(0)), ("delta", .object(delta)),
                                                       ("finish_reason", finish.map(JSON.string) ?? .null)])])))
        } else {
            fields.append(("choices", .array([])))
            fields.append(("usage", usageJSON(prompt: "prompt_tokens", completion: "completion_tokens")))
        }
        return "data: \(JSON.object(fields).description)\n\n"
    }

    private func finishOpenAI() {
        stream.write(openAIChunk(delta: [], finish: calls.isEmpty ? "stop" : "tool_calls"))
        if includeUsage { stream.write(openAIChunk(delta: nil, finish: nil)) }
        stream.write("data: [DONE]\n\n")
    }

    private func sendAnthropicStart() {
        stream.write(anthropicEvent("message_start", .object([("type", .string("message_start")), ("message", .object([
            ("id", .string("msg_mock")), ("type", .string("message")), ("role", .string("assistant")), ("model", .string(model)),
            ("content", .array([])), ("usage", .object([("input_tokens", .int(promptTokens)), ("output_tokens", .int(0))])),
        ]))])))
        // A text reply's block opens at once, as before; a call's block when the call starts.
        if case .call = pieces.first {} else {
            stream.write(startBlock(.object([("type", .string("text")), ("text", .string(""))])))
        }
    }

    private func anthropicEvents(_ piece: Piece) -> String {
        switch piece {
        case .text(let text):
            let start = openBlock == nil ? startBlock(.object([("type", .string("text")), ("text", .string(""))])) : ""
            return start + blockDelta(.object([("type", .string("text_delta")), ("text", .string(text))]))
        case .call(let i):
            return closeBlock() + startBlock(.object([("type", .string("tool_use")), ("id", .string(calls[i].id)),
                                                      ("name", .string(calls[i].name)), ("input", .object([]))]))
        case .arguments(_, let text):
            return blockDelta(.object([("type", .string("input_json_delta")), ("partial_json", .string(text))]))
        }
    }

    private func startBlock(_ block: JSON) -> String {
        let index = blocks
        blocks += 1
        openBlock = index
        return anthropicEvent("content_block_start", .object([("type", .string("content_block_start")), ("index", .int(index)),
                                                              ("content_block", block)]))
    }

    private func blockDelta(_ delta: JSON) -> String {
        anthropicEvent("content_block_delta", .object([("type", .string("content_block_delta")), ("index", .int(openBlock ?? 0)),
                                                       ("delta", delta)]))
    }

    private func closeBlock() -> String {
        guard let index = openBlock else { return "" }
        openBlock = nil
        return anthropicEvent("content_block_stop", .object([("type", .string("content_block_stop")), ("index", .int(index))]))
    }

    private func finishAnthropic() {
        stream.write(closeBlock())
        stream.write(anthropicEvent("message_delta", .object([("type", .string("message_delta")),
                                                              ("delta", .object([("stop_reason", .string(calls.isEmpty ? "end_turn" : "tool_use"))])),
                                                              ("usage", .object([("output_tokens", .int(sent))]))])))
        stream.write(anthropicEvent("message_stop", .object([("type", .string("message_stop"))])))
    }

    private func anthropicEvent(_ name: String, _ data: JSON) -> String { "event: \(name)\ndata: \(data.description)\n\n" }

    private func usageJSON(prompt: String, completion: String) -> JSON {
        .object([(prompt, .int(promptTokens)), (completion, .int(sent)), ("total_tokens", .int(promptTokens + sent))])
    }

    // MARK: Whole answers and errors

    private func respondWhole() {
        sent = pieces.count
        let text = replyText
        let body: JSON
        switch format {
        case .openAI:
            var message: [(String, JSON)] = [("role", .string("assistant")), ("content", calls.isEmpty || !text.isEmpty ? .string(text) : .null)]
            if !calls.isEmpty {
                message.append(("tool_calls", .array(calls.map { call in
                    .object([("id", .string(call.id)), ("type", .string("function")),
                             ("function", .object([("name", .string(call.name)), ("arguments", .string(call.argumentsText))]))])
                })))
            }
            body = .object([("id", .string("chatcmpl-mock")), ("object", .string("chat.completion")), ("created", .int(0)), ("model", .string(model)),
                            ("choices", .array([.object([("index", .int(0)), ("message", .object(message)),
                                                         ("finish_reason", .string(calls.isEmpty ? "stop" : "tool_calls"))])])),
                            ("usage", usageJSON(prompt: "prompt_tokens", completion: "completion_tokens"))])
        case .anthropic:
            var content: [JSON] = calls.isEmpty || !text.isEmpty ? [.object([("type", .string("text")), ("text", .string(text))])] : []
            content += calls.map { call in
                .object([("type", .string("tool_use")), ("id", .string(call.id)), ("name", .string(call.name)), ("input", call.arguments)])
            }
            body = .object([("id", .string("msg_mock")), ("type", .string("message")), ("role", .string("assistant")), ("model", .string(model)),
                            ("content", .array(content)),
                            ("stop_reason", .string(calls.isEmpty ? "end_turn" : "tool_use")),
                            ("usage", .object([("input_tokens", .int(promptTokens)), ("output_tokens", .int(sent))]))])
        }
        stream.start(.ok, headers: [("Content-Type", "application/json")])
        stream.write(body.description)
        stream.end()
    }

    private func fail(_ status: HTTPStatus, type: String, _ message: String, retryAfter: Bool = false) {
        let body = JSON.object([("error", .object([("message", .string(message)), ("type", .string(type)), ("code", .null)]))])
        var headers = [("Content-Type", "application/json")]
        if retryAfter { headers.append(("Retry-After", "1")) }
        stream.start(status, headers: headers)
        stream.write(body.description)
        stream.end()
    }

    // MARK: Content

    /// A message's text: a string, or the text parts of a content array.
    static func text(of message: JSON) -> String {
        if let text = message["content"]?.string { return text }
        return (message["content"]?.array ?? []).compactMap { $0["text"]?.string }.joined(separator: " ")
    }

    /// "You said: …" then filler words, `tokens` words in all.
    static func reply(to text: String, tokens: Int) -> [String] {
        let heard = text.split(separator: " ").prefix(8).map(String.init)
        let filler = ["this", "is", "a", "mock", "reply", "streamed", "word", "by", "word", "from", "parley", "mock-llm."]
        var words = ["You", "said:"] + heard + ["—"]
        var i = 0
        while words.count < tokens { words.append(filler[i % filler.count]); i += 1 }
        return Array(words.prefix(tokens))
    }
}
