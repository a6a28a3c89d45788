import JSON
import Models

/// A GPT-Live session kept after it ended (`store: true`), for forks and its recording's download
/// (`POST|WS /v1/live/sessions/{id}/fork`, `GET /v1/live/sessions/{id}/content`): whose it is, its
/// configuration as it last was, and its conversation, as text messages.
///
/// What it does not keep: a credential. The Responses backend's MCP servers are kept as the
/// session resource shows them (`[redacted]`), so a fork of a session whose backend sent
/// credentials must give its tools again (`delegation.responses.tools`), or is refused.
package struct LiveStoredSession: Sendable, Equatable {
    /// The tenant that owned it ("" on a server without auth): only it may fork or download it.
    package var tenant: String
    package var config: LiveSessionConfig
    /// The conversation's messages, oldest first: what a fork starts from, as its `input`.
    package var history: [LiveSessionConfig.InitialItem]
    /// The recording's file name in the recordings directory, when the session was recorded.
    package var recording: String?
    /// When it ended, in seconds since the epoch.
    package var endedAt: Int

    /// A fork inherits at most this many of the conversation's last messages: as many as a
    /// session may be started with (`LiveSessionConfig.maxInputItems`).
    package static let maxHistory = LiveSessionConfig.maxInputItems

    package init(tenant: String, config: LiveSessionConfig, history: [LiveSessionConfig.InitialItem], recording: String?, endedAt: Int) {
        self.tenant = tenant
        self.config = config
        self.history = Array(history.suffix(Self.maxHistory))
        self.recording = recording
        self.endedAt = endedAt
    }

    /// The conversation as a fork is to hear it: the user's and the assistant's words, and
    /// developer messages; tool calls and their results are the turns' own business, and what
    /// came of them was said in the assistant's words.
    package static func history(_ messages: [ChatMessage]) -> [LiveSessionConfig.InitialItem] {
        messages.compactMap { message in
            guard !message.text.isEmpty else { return nil }
            switch message.role {
            case .system, .user, .assistant: return .message(message.role, message.text)
            case .tool: return nil
            }
        }
    }

    package var json: JSON {
        var fields: [(String, JSON)] = [("tenant", .string(tenant)), ("session", config.startJSON),
                                        ("history", .array(history.map(\.json))), ("ended_at", .int(endedAt))]
        if let recording { fields.append(("recording", .string(recording))) }
        return .object(fields)
    }

    /// As `json` wrote it; nil if it is not (a store's damage, or another version's record).
    package static func parse(_ text: String) -> LiveStoredSession? {
        guard let json = try? JSON(parsing: text), let tenant = json["tenant"]?.string, let session = json["session"], session.object != nil,
              let history = json["history"]?.array, let endedAt = json["ended_at"]?.int,
              var config = try? LiveSessionConfig.parse(EventFields(session)) else { return nil }
        config.input = []
        var items: [LiveSessionConfig.InitialItem] = []
        for item in history {
            guard let role = item["role"]?.string, let text = item["content"]?.array?.first?["text"]?.string else { return nil }
            switch role {
            case "developer": items.append(.message(.system, text))
            case "user": items.append(.message(.user, text))
            case "assistant": items.append(.message(.assistant, text))
            default: return nil
            }
        }
        return LiveStoredSession(tenant: tenant, config: config, history: items, recording: json["recording"]?.string, endedAt: endedAt)
    }

    /// The configuration of a fork, from `overrides` (`session.start`'s `session` on the fork's
    /// WebSocket, or the `session` of `POST …/fork`; nil or `{}` inherits everything): the model,
    /// voice, instructions and conversation are the stored session's; `audio.format` is a
    /// WebSocket fork's (`media` false), `client` a WebRTC fork's; `delegation` may update a
    /// Responses backend but not change who handles tasks; `store` chooses whether the fork is kept.
    package func fork(_ overrides: EventFields?, media: Bool) throws(ProtocolError) -> LiveSessionConfig {
        var config = config
        config.input = history
        config.format = media ? .negotiated : .pcm24k
        if !media { (config.client, config.dataChannel) = (nil, nil) }
        var delegationGiven = false
        if let overrides {
            try overrides.refuseUnknown(media ? ["client", "delegation", "store"] : ["audio", "client", "delegation", "store"])
            if let audio = try overrides.object("audio") {
                try audio.refuseUnknown(["format"])
                if let format = try audio.object("format") { config.format = try LiveAudioFormat.parse(format) }
            }
            if overrides.has("client") {
                guard media else {
                    throw ProtocolError(.invalidValue, "'client' overrides are for WebRTC forks; a WebSocket fork has no front end's data channel", param: overrides.name("client"))
                }
                if let client = try overrides.object("client") { try config.setClient(client) }
            }
            if let delegation = try overrides.object("delegation") {
                guard try delegation.requiredString("type") == "responses", case .responses = config.delegation else {
                    throw ProtocolError(.invalidValue, "a fork may update its stored session's Responses backend, never change who handles its tasks",
                                        param: delegation.name("type"))
                }
                config.delegation = config.delegation.updated(to: try LiveDelegation.parse(delegation, update: true))
                delegationGiven = (try delegation.object("responses"))?.has("tools") == true
            }
            if let store = try overrides.bool("store") { config.store = store }
        }
        if config.delegation.backend?.hasMCPCredentials == true, !delegationGiven {
            throw ProtocolError(.invalidValue, "the stored session's backend reached MCP servers with credentials, which Parley does not keep: give its tools again in 'delegation.responses.tools'",
                                param: overrides?.name("delegation") ?? "session.delegation")
        }
        return config
    }
}

extension LiveSessionConfig.InitialItem {
    /// A text message of the conversation, in the shape `input` takes it.
    package static func message(_ role: ChatMessage.Role, _ text: String) -> Self {
        let (name, part) = switch role {
        case .system, .tool: ("developer", "input_text")
        case .user: ("user", "input_text")
        case .assistant: ("assistant", "output_text")
        }
        let json = JSON.object([("type", .string("message")), ("role", .string(name)),
                                ("content", .array([.object([("type", .string(part)), ("text", .string(text))])]))])
        return Self(role: role == .tool ? .system : role, text: text, json: json)
    }
}
