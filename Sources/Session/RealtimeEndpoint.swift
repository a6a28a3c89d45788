import Server

/// The two session endpoints and what they share: the model, and who may connect.
///
/// `/v1/realtime` speaks the OpenAI Realtime API as it is (JSON events, base64 pcm16 at 24 kHz);
/// `/ws` adds binary frames, each one Opus packet, and the `opus` audio format. Both choose the
/// API dialect per connection from the `OpenAI-Beta` header.
public struct RealtimeEndpoint: Sendable {
    public let model: any LanguageModel
    /// The model name sessions report (session.created's `model`).
    public let modelName: String
    /// When set, clients must present it: `Authorization: Bearer …`, or for browsers the
    /// subprotocol `openai-insecure-api-key.…`. When nil, any key (or none) is accepted.
    public let requiredKey: String?
    /// Recognition and synthesis, when configured.
    public let speech: SpeechServices

    public init(model: any LanguageModel, modelName: String, requiredKey: String? = nil, speech: SpeechServices = SpeechServices()) {
        self.model = model
        self.modelName = modelName
        self.requiredKey = requiredKey
        self.speech = speech
    }

    public func install(on routes: inout Router.Builder) {
        let pool = speech.pool
        routes.addMetrics { SessionMetrics.shared.render() + SpeechMetrics.shared.render(pool: pool) }
        routes.webSocket("/v1/realtime", name: "realtime", negotiate: negotiate) { request, _ in
            RealtimeSessionHandler(endpoint: self, request: request, allowsOpus: false)
        }
        routes.webSocket("/ws", name: "ws", negotiate: negotiate) { request, _ in
            RealtimeSessionHandler(endpoint: self, request: request, allowsOpus: true)
        }
    }

    static let keyProtocolPrefix = "openai-insecure-api-key."

    /// Browsers cannot set headers, so they offer `realtime` plus `openai-insecure-api-key.<key>`;
    /// the answer names `realtime` (a key must never be echoed back in a response header).
    func negotiate(_ request: HTTPRequest, _ offered: [String]) -> Result<String?, HTTPStatus> {
        if let requiredKey {
            let bearer = request.header("authorization").map { Substring($0) }.flatMap { $0.hasPrefix("Bearer ") ? $0.dropFirst(7) : nil }
            let fromProtocol = offered.first { $0.hasPrefix(Self.keyProtocolPrefix) }?.dropFirst(Self.keyProtocolPrefix.count)
            guard bearer.map(String.init) == requiredKey || fromProtocol.map(String.init) == requiredKey else { return .failure(.unauthorized) }
        }
        return .success(offered.contains("realtime") ? "realtime" : nil)
    }
}
