import JSON
import Server
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
        self.baseURL = baseURL
        self.model = model
        self.apiKey = apiKey
        self.defaultMaxTokens = defaultMaxTokens
        self.timeouts = timeouts
    }

    public func stream(_ request: ModelRequest, on loop: EventLoop, _ onEvent: @escaping (ModelEvent) -> Void) -> any ModelCall {
        let system = request.messages.filter { $0.role == .system }.map(\.text).joined(separator: "\n\n")
        var body: [(String, JSON)] = [
            ("model", .string(model)),
            ("max_tokens", .int(request.maxOutputTokens ?? defaultMaxTokens)),
            ("messages", .array(Self.turns(request.messages))),
            ("stream", .bool(true)),
        ]
        if !system.isEmpty { body.append(("system", .string(system))) }
        var headers = [("Content-Type", "application/json"), ("Accept", "text/event-stream"), ("anthropic-version", "2023-06-01")]
        if let apiKey { headers.append(("x-api-key", apiKey)) }
        var http = HTTPClientRequest(method: "POST", url: baseURL.appending("/messages"), headers: headers,
                                     body: Array(JSON.object(body).description.utf8))
        http.timeouts = timeouts
        return UpstreamModelCall(http, on: loop, decode: Self.decode, onEvent: onEvent)
    }

    /// The Messages API wants user and assistant turns alternating, starting with the user:
    /// consecutive messages of one role are joined, and a leading assistant turn is dropped.
    static func turns(_ messages: [ChatMessage]) -> [JSON] {
        var turns: [(role: ChatMessage.Role, text: String)] = []
        for message in messages where message.role != .system {
            if turns.last?.role == message.role { turns[turns.count - 1].text += "\n\n" + message.text }
            else if !(turns.isEmpty && message.role == .assistant) { turns.append((message.role, message.text)) }
        }
        return turns.map { .object([("role", .string($0.role.rawValue)), ("content", .string($0.text))]) }
    }

    /// One event of the stream. `message_delta` carries the output usage and why the model stopped
    /// (`stop_reason`: `end_turn`, or `max_tokens` at the token limit).
    static func decode(_ event: ServerSentEventParser.Event, _ ending: inout UpstreamModelCall.Ending) -> UpstreamModelCall.DecodeResult {
        guard let data = try? JSON(parsing: event.data) else {
            return .failed(ModelError(code: "upstream_error", message: "the upstream sent an event that is not JSON"))
        }
        switch data["type"]?.string ?? event.name {
        case "content_block_delta":
            return data["delta"]?["text"].flatMap(\.string).map { .events([.delta($0)]) } ?? .nothing
        case "message_start":
            ending.usage = Usage(inputTokens: data["message"]?["usage"]?["input_tokens"]?.int ?? 0, outputTokens: 0)
            return .nothing
        case "message_delta":
            if let output = data["usage"]?["output_tokens"]?.int { ending.usage = Usage(inputTokens: ending.usage?.inputTokens ?? 0, outputTokens: output) }
            if data["delta"]?["stop_reason"]?.string == "max_tokens" { ending.reason = .length }
            return .nothing
        case "message_stop":
            return .done
        case "error":
            return .failed(ModelError(code: "upstream_error", message: data["error"]?["message"]?.string ?? "the upstream reported an error"))
        default:
            return .nothing
        }
    }
}
