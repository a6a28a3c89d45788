import Access
import JSON
import Loop
import Server
import SessionEngine

/// `POST /v1/realtime/client_secrets` (GA) and `POST /v1/realtime/sessions` (beta): a server with a
/// real key asks for a short-lived secret for one browser session, with the settings it pins.
extension RealtimeEndpoint {
    /// How long a secret opens sessions, by default and at most (`expires_after.seconds`).
    static let secretSecondsDefault = 60
    static let secretSecondsRange = 10...7200
    /// How long a session opened with a secret may last.
    static let secretSessionSeconds = 3600

    func createClientSecret(_ request: HTTPRequest, dialect: Dialect) -> HTTPResponse {
        // Minting needs a real key or token when the server has them; a secret cannot mint another.
        let caller: Caller
        switch access.identify(request, offered: [], minting: true) {
        case .success(let identified): caller = identified
        case .failure(let refusal): return refusal.response
        }
        let text = String(decoding: request.body, as: UTF8.self)
        guard let body = text.isEmpty ? .object([]) : try? JSON(parsing: text), body.object != nil else {
            return .jsonError(.badRequest, code: "invalid_json", message: "the body must be a JSON object")
        }
        let fields = EventFields(body)
        do throws(ProtocolError) {
            var seconds = Self.secretSecondsDefault
            if let expires = try fields.object("expires_after"),
               let given = try expires.integer("seconds", in: Self.secretSecondsRange.lowerBound...Self.secretSecondsRange.upperBound) {
                seconds = given
            }
            // GA nests the settings in `session`; the beta's /sessions takes them at the top.
            let sessionJSON: JSON = dialect == .ga ? (body["session"] ?? .object([])) : body
            guard sessionJSON.object != nil else { throw fields.invalid("session", "must be an object") }
            let session = EventFields(sessionJSON, path: dialect == .ga ? "session" : "")
            var configuration = SessionConfiguration()
            let update = try SessionUpdate.parse(session)
            // A secret for a transcription session makes one: its type is not a switch.
            if let type = update.sessionType { configuration.type = type }
            try configuration.apply(update, allowsOpus: false)
            // A secret carries its settings, signed but readable, to the browser that holds it:
            // an MCP server's credentials pinned in one would be the browser's to read.
            if let index = configuration.mcpServers.firstIndex(where: \.hasCredentials) {
                throw ProtocolError(.invalidValue, "a client secret's settings travel with it to the browser, so they cannot hold an MCP server's authorization or headers ('\(configuration.mcpServers[index].label)'): name that server from your own backend (the sideband, or --twilio-session for calls), or one that needs none",
                                    param: "session.tools")
            }
            let model = try session.string("model") ?? modelName
            let expiresAt = WallClock.seconds() + seconds
            let secret = ClientSecret(expiresAt: expiresAt, sessionSeconds: Self.secretSessionSeconds, session: sessionJSON,
                                      tenant: caller.tenant, limits: caller.limits)
            guard let value = access.signer.issue(secret) else {
                return .jsonError(.badRequest, code: "invalid_value", message: "the session settings are too large for a client secret (at most \(ClientSecretSigner.maxSecretBytes) bytes)")
            }
            let info = SessionInfo(id: "sess_" + Base64.encodeURL(Array(value.utf8.suffix(9))), model: model, configuration: configuration)
            var answer: [(String, JSON)]
            switch dialect {
            case .ga:
                answer = [("value", .string(value)), ("expires_at", .int(expiresAt)), ("session", info.json(dialect: .ga))]
            case .beta:
                answer = info.json(dialect: .beta).object ?? []
                answer.append(("client_secret", .object([("value", .string(value)), ("expires_at", .int(expiresAt))])))
            }
            return HTTPResponse(status: .ok, contentType: "application/json", body: JSON.object(answer).description + "\n")
        } catch {
            return .jsonError(.badRequest, code: error.code.rawValue, message: error.message)
        }
    }
}
