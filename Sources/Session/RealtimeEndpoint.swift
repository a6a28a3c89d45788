import Loop
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
    /// When set, clients must present one of these keys (`Authorization: Bearer …`, the `api-key`
    /// header, or for browsers the subprotocol `openai-insecure-api-key.…`), checked before the
    /// upgrade. When nil, any key (or none) is accepted.
    public let keys: APIKeys?
    /// Recognition and synthesis, when configured.
    public let speech: SpeechServices
    /// What client secrets are signed and checked with.
    public let signer: ClientSecretSigner
    /// What each session may spend.
    public let limits: SessionLimits

    public init(model: any LanguageModel, modelName: String, keys: APIKeys? = nil, speech: SpeechServices = SpeechServices(),
                signer: ClientSecretSigner = .random(), limits: SessionLimits = SessionLimits()) {
        self.limits = limits
        self.model = model
        self.modelName = modelName
        self.keys = keys
        self.signer = signer
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
        // Azure OpenAI's path (`?api-version=…&deployment=…`, the key in `api-key`): the same
        // sessions, so Azure-style clients need no change but the host.
        routes.webSocket("/openai/realtime", name: "azure", negotiate: negotiate) { request, _ in
            RealtimeSessionHandler(endpoint: self, request: request, allowsOpus: false)
        }
        routes.post("/v1/realtime/client_secrets") { request in self.createClientSecret(request, dialect: .ga) }
        routes.post("/v1/realtime/sessions") { request in self.createClientSecret(request, dialect: .beta) }
    }

    /// The client secret a request's key is, checked: signed by this server and good for
    /// connecting now. nil when the key is not a client secret, or is one no longer good.
    func clientSecret(_ request: HTTPRequest) -> ClientSecret? {
        // The subprotocols as sent: `tokens` lowercases them, and a secret is case-sensitive.
        let offered = request.headers.filter { $0.name.lowercased() == "sec-websocket-protocol" }
            .flatMap { $0.value.split(separator: ",").map { String($0.trimmingSpaces()) } }
        guard let key = APIKeys.presented(in: request, offered: offered), key.hasPrefix("ek_") else { return nil }
        return signer.verify(key, now: WallClock.seconds())
    }

    /// Browsers cannot set headers, so they offer `realtime` plus `openai-insecure-api-key.<key>`;
    /// the answer names `realtime` (a key must never be echoed back in a response header).
    func negotiate(_ request: HTTPRequest, _ offered: [String]) -> Result<String?, HTTPRefusal> {
        let presented = APIKeys.presented(in: request, offered: offered)
        if let key = presented, key.hasPrefix("ek_") {
            // A client secret must be one of ours and still good, keys or not.
            guard signer.verify(key, now: WallClock.seconds()) != nil else {
                return .failure(HTTPRefusal(.jsonError(.unauthorized, code: "invalid_client_secret",
                    message: "the client secret is expired, or was not issued by this server", headers: [("WWW-Authenticate", "Bearer")])))
            }
            return .success(offered.contains("realtime") ? "realtime" : nil)
        }
        if let keys {
            guard let key = presented else {
                return .failure(HTTPRefusal(.jsonError(.unauthorized, code: "missing_api_key",
                    message: "no API key: send it as Authorization: Bearer <key>, in the api-key header, or as the openai-insecure-api-key.<key> subprotocol",
                    headers: [("WWW-Authenticate", "Bearer")])))
            }
            guard keys.accepts(key) else {
                return .failure(HTTPRefusal(.jsonError(.unauthorized, code: "invalid_api_key", message: "the API key is not valid",
                                                        headers: [("WWW-Authenticate", "Bearer")])))
            }
        }
        return .success(offered.contains("realtime") ? "realtime" : nil)
    }
}
