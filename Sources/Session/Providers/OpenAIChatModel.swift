import JSON
import Server
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
        self.baseURL = baseURL
        self.model = model
        self.apiKey = apiKey
        self.timeouts = timeouts
    }

    public func stream(_ request: ModelRequest, on loop: EventLoop, _ onEvent: @escaping (ModelEvent) -> Void) -> any ModelCall {
        var body: [(String, JSON)] = [
            ("model", .string(model)),
            ("messages", .array(request.messages.map { .object([("role", .string($0.role.rawValue)), ("content", .string($0.text))]) })),
            ("stream", .bool(true)),
            ("stream_options", .object([("include_usage", .bool(true))])),
        ]
        if let limit = request.maxOutputTokens { body.append(("max_tokens", .int(limit))) }
        var headers = [("Content-Type", "application/json"), ("Accept", "text/event-stream")]
        if let apiKey { headers.append(("Authorization", "Bearer \(apiKey)")) }
        var http = HTTPClientRequest(method: "POST", url: baseURL.appending("/chat/completions"), headers: headers,
                                     body: Array(JSON.object(body).description.utf8))
        http.timeouts = timeouts
        return UpstreamModelCall(http, on: loop, decode: Self.decode, onEvent: onEvent)
    }

    /// One chunk: `data: {"choices":[{"delta":{"content":"…"}}]}`, a usage chunk, or `[DONE]`.
    /// The last choice chunk says why the model stopped (`finish_reason`: `stop`, or `length` at
    /// the token limit); some servers put text in that chunk too.
    static func decode(_ event: ServerSentEventParser.Event, _ ending: inout UpstreamModelCall.Ending) -> UpstreamModelCall.DecodeResult {
        if event.data == "[DONE]" { return .done }
        guard let chunk = try? JSON(parsing: event.data) else {
            return .failed(ModelError(code: "upstream_error", message: "the upstream sent an event that is not JSON"))
        }
        if let message = chunk["error"]?["message"]?.string { return .failed(ModelError(code: "upstream_error", message: message)) }
        if let reported = chunk["usage"], let prompt = reported["prompt_tokens"]?.int, let completion = reported["completion_tokens"]?.int {
            ending.usage = Usage(inputTokens: prompt, outputTokens: completion)
        }
        let choice = chunk["choices"]?.array?.first
        if choice?["finish_reason"]?.string == "length" { ending.reason = .length }
        if let text = choice?["delta"]?["content"]?.string, !text.isEmpty { return .events([.delta(text)]) }
        return .nothing
    }
}
