import JSON
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
final class MockReply {
    enum Format { case openAI, anthropic }

    let request: HTTPRequest
    let stream: HTTPResponseStream
    let format: Format
    private var options: MockLLMOptions
    private var words: [String] = []
    private var sent = 0
    private var promptTokens = 0
    private var model = "parley-mock"
    private var includeUsage = false
    private var pending: ScheduledTask?

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
        model = body["model"]?.string ?? model
        includeUsage = body["stream_options"]?["include_usage"]?.bool ?? false
        let texts = messages.map(Self.text)
        promptTokens = texts.reduce(0) { $0 + $1.split(separator: " ").count } + (body["system"]?.string?.split(separator: " ").count ?? 0)
        words = Self.reply(to: texts.last ?? "", tokens: options.replyTokens)
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

    // MARK: Streaming

    private func sendNext() {
        guard stream.isOpen else { return }
        if sent < words.count {
            let word = (sent == 0 ? "" : " ") + words[sent]
            sent += 1
            stream.write(format == .openAI ? openAIChunk(content: word) : anthropicEvent("content_block_delta",
                .object([("type", .string("content_block_delta")), ("index", .int(0)),
                         ("delta", .object([("type", .string("text_delta")), ("text", .string(word))]))])))
            if options.fault == .stall && sent == 1 { return }  // and never another byte
            if options.fault == .drop && sent == min(3, words.count) { return stream.abort() }
            pending = stream.loop.schedule(after: 1 / options.tokensPerSecond) { self.sendNext() }
            return
        }
        format == .openAI ? finishOpenAI() : finishAnthropic()
        stream.end()
    }

    private func openAIChunk(content: String?, finish: String? = nil, usage: Bool = false) -> String {
        var delta: [(String, JSON)] = []
        if sent <= 1 && finish == nil { delta.append(("role", .string("assistant"))) }
        if let content { delta.append(("content", .string(content))) }
        var fields: [(String, JSON)] = [("id", .string("chatcmpl-mock")), ("object", .string("chat.completion.chunk")),
                                        ("created", .int(0)), ("model", .string(model))]
        fields.append(("choices", usage ? .array([]) : .array([.object([("index", .int(0)), ("delta", .object(delta)),
                                                                        ("finish_reason", finish.map(JSON.string) ?? .null)])])))
        if usage { fields.append(("usage", usageJSON(prompt: "prompt_tokens", completion: "completion_tokens"))) }
        return "data: \(JSON.object(fields).description)\n\n"
    }

    private func finishOpenAI() {
        stream.write(openAIChunk(content: nil, finish: "stop"))
        if includeUsage { stream.write(openAIChunk(content: nil, usage: true)) }
        stream.write("data: [DONE]\n\n")
    }

    private func sendAnthropicStart() {
        stream.write(anthropicEvent("message_start", .object([("type", .string("message_start")), ("message", .object([
            ("id", .string("msg_mock")), ("type", .string("message")), ("role", .string("assistant")), ("model", .string(model)),
            ("content", .array([])), ("usage", .object([("input_tokens", .int(promptTokens)), ("output_tokens", .int(0))])),
        ]))])))
        stream.write(anthropicEvent("content_block_start", .object([("type", .string("content_block_start")), ("index", .int(0)),
                                                                    ("content_block", .object([("type", .string("text")), ("text", .string(""))]))])))
    }

    private func finishAnthropic() {
        stream.write(anthropicEvent("content_block_stop", .object([("type", .string("content_block_stop")), ("index", .int(0))])))
        stream.write(anthropicEvent("message_delta", .object([("type", .string("message_delta")),
                                                              ("delta", .object([("stop_reason", .string("end_turn"))])),
                                                              ("usage", .object([("output_tokens", .int(sent))]))])))
        stream.write(anthropicEvent("message_stop", .object([("type", .string("message_stop"))])))
    }

    private func anthropicEvent(_ name: String, _ data: JSON) -> String { "event: \(name)\ndata: \(data.description)\n\n" }

    private func usageJSON(prompt: String, completion: String) -> JSON {
        .object([(prompt, .int(promptTokens)), (completion, .int(sent)), ("total_tokens", .int(promptTokens + sent))])
    }

    // MARK: Whole answers and errors

    private func respondWhole() {
        sent = words.count
        let text = words.joined(separator: " ")
        let body: JSON = format == .openAI
            ? .object([("id", .string("chatcmpl-mock")), ("object", .string("chat.completion")), ("created", .int(0)), ("model", .string(model)),
                       ("choices", .array([.object([("index", .int(0)), ("message", .object([("role", .string("assistant")), ("content", .string(text))])),
                                                    ("finish_reason", .string("stop"))])])),
                       ("usage", usageJSON(prompt: "prompt_tokens", completion: "completion_tokens"))])
            : .object([("id", .string("msg_mock")), ("type", .string("message")), ("role", .string("assistant")), ("model", .string(model)),
                       ("content", .array([.object([("type", .string("text")), ("text", .string(text))])])),
                       ("stop_reason", .string("end_turn")),
                       ("usage", .object([("input_tokens", .int(promptTokens)), ("output_tokens", .int(sent))]))])
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
