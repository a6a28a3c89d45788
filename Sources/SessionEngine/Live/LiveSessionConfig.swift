import JSON
import Models

/// A GPT-Live session's configuration (`session.start`'s `session`), parsed strictly as OpenAI's
/// is: a field this version of the protocol does not define is refused (`unknown_parameter`),
/// never ignored (openai SDK 3.54.0, `openai/types/live/session_config.py`).
///
/// What it means on Parley's engine: `model` is the name the session reports (the voice front is
/// the server's configured language model); `instructions` are the engine's; `audio.format` is
/// both directions' format; the voice is passed to the synthesiser as a Realtime voice is; `input`
/// becomes the conversation's first items; `delegation` chooses who handles a delegated task.
package struct LiveSessionConfig: Sendable, Equatable {
    package var model: String
    package var format: LiveAudioFormat = .pcm24k
    /// A built-in voice's name, or a custom voice's `id`; Parley's synthesiser maps either as it
    /// maps a Realtime voice (docs/protocol.md, "GPT-Live").
    package var voice = "marin"
    /// Whether `voice` was given as `{"id": …}`.
    package var customVoice = false
    package var instructions: String?
    package var input: [InitialItem] = []
    package var delegation: LiveDelegation = .client(acknowledgementDelayMs: nil)
    package var safetyIdentifier: String?
    package var store = false
    /// `client` (a WebRTC front end's capabilities), kept as given: echoed in the resource.
    package var client: JSON?
    /// What `client` allows the front end's data channel (nil: everything).
    package var dataChannel: LiveDataChannelPermissions?

    package struct InitialItem: Sendable, Equatable {
        package var role: ChatMessage.Role
        package var text: String
        package var json: JSON
    }

    /// At most this many `input` messages (OpenAI's limit).
    package static let maxInputItems = 128

    package init(model: String) {
        self.model = model
    }

    /// `media`: the session's audio is a call's (WebRTC, SIP), whose format the call negotiates,
    /// so `audio.format` is not one of its fields (`MediaSessionConfigParam`).
    package static func parse(_ session: EventFields, media: Bool = false) throws(ProtocolError) -> LiveSessionConfig {
        try session.refuseUnknown(["model", "audio", "client", "delegation", "input", "instructions", "safety_identifier", "store", "triggers"])
        var config = LiveSessionConfig(model: try session.requiredString("model"))
        if media { config.format = .negotiated }
        if let audio = try session.object("audio") {
            try audio.refuseUnknown(media ? ["output"] : ["format", "output"])
            if let format = try audio.object("format") { config.format = try LiveAudioFormat.parse(format) }
            if let output = try audio.object("output") {
                try output.refuseUnknown(["voice"])
                if let voice = try? output.object("voice") {
                    try voice.refuseUnknown(["id"])
                    config.voice = try voice.requiredString("id")
                    config.customVoice = true
                } else if let voice = try output.string("voice") {
                    config.voice = voice
                }
                guard !config.voice.isEmpty, config.voice.utf8.count <= SessionConfiguration.maxVoiceBytes else {
                    throw output.invalid("voice", "must be a voice name of 1 to \(SessionConfiguration.maxVoiceBytes) bytes")
                }
            }
        }
        if let instructions = try session.string("instructions") {
            guard instructions.utf8.count <= SessionConfiguration.maxInstructionBytes else {
                throw session.invalid("instructions", "is longer than \(SessionConfiguration.maxInstructionBytes) bytes")
            }
            // "Omitted or blank instructions use server defaults."
            if !instructions.allSatisfy(\.isWhitespace) { config.instructions = instructions }
        }
        if let items = try session.array("input") {
            guard items.count <= maxInputItems else { throw session.invalid("input", "holds \(items.count) messages; at most \(maxInputItems) are allowed") }
            config.input = try items.enumerated().map { (index, item) throws(ProtocolError) in try initialItem(item, session.name("input[\(index)]")) }
        }
        if session.has("delegation") {
            config.delegation = try LiveDelegation.parse(try session.object("delegation"))
        }
        config.safetyIdentifier = try session.string("safety_identifier")
        config.store = try session.bool("store") ?? false
        if let client = try session.object("client") { try config.setClient(client) }
        try refuseTriggers(session)
        return config
    }

    /// `client`: the front end's data channel permissions, and the object as given for the echo.
    package mutating func setClient(_ client: EventFields) throws(ProtocolError) {
        dataChannel = try LiveDataChannelPermissions.parse(client)
        self.client = client.members
    }

    /// Decisions triggers: refused while Decisions is not built (docs/protocol.md); an empty list
    /// (no triggers) is what Parley has.
    package static func refuseTriggers(_ session: EventFields) throws(ProtocolError) {
        if let triggers = try session.array("triggers"), !triggers.isEmpty {
            throw ProtocolError(.unsupportedValue, "Decisions triggers are not supported by Parley; omit 'session.triggers' or send an empty list",
                                param: session.name("triggers"))
        }
    }

    private static func initialItem(_ json: JSON, _ path: String) throws(ProtocolError) -> InitialItem {
        guard json.object != nil else { throw ProtocolError(.invalidValue, "'\(path)' must be an object", param: path) }
        let item = EventFields(json, path: path)
        try item.refuseUnknown(["role", "content", "id", "status", "type"])
        let roleName = try item.requiredString("role")
        let role: ChatMessage.Role
        switch roleName {
        case "developer": role = .system
        case "user": role = .user
        case "assistant": role = .assistant
        default: throw item.invalid("role", "must be 'developer', 'user' or 'assistant', got '\(roleName)'")
        }
        _ = try item.choice("type", ["message"])
        _ = try item.choice("status", ["incomplete", "completed"])
        guard let content = try item.array("content") else { throw item.missing("content") }
        guard content.count == 1, content[0].object != nil else { throw item.invalid("content", "must hold exactly one text part") }
        let part = EventFields(content[0], path: item.name("content[0]"))
        try part.refuseUnknown(["text", "type"])
        _ = try part.choice("type", role == .assistant ? ["text", "output_text"] : ["input_text"])
        return InitialItem(role: role, text: try part.requiredString("text"), json: json)
    }

    /// The session's settings on the engine: the model owns the floor (`semantic_vad`, replies
    /// and barge-in on), audio both ways in the session's format, and the `delegate` function
    /// through which the voice front hands tasks to its backend.
    package var engineUpdate: SessionUpdate {
        var update = SessionUpdate(instructions: instructions ?? Self.defaultInstructions, outputModalities: .audio, voice: voice,
                                   inputAudioFormat: format.engineFormat, outputAudioFormat: format.engineFormat,
                                   turnDetection: .serverVAD(SessionUpdate.ServerVADChange(createResponse: true, interruptResponse: true, semanticEagerness: .auto)))
        update.tools = ToolSet.of([LiveDelegation.tool])
        update.toolChoice = .auto
        return update
    }

    /// The front's instructions when the session gives none (OpenAI: "server defaults").
    package static let defaultInstructions = "You are a helpful voice assistant. Speak briefly and naturally. When the user asks for something that needs a lookup, a tool or an action, hand it to your backend with the delegate function and tell the user you are on it."

    /// As `session.start` would give it (read back by `parse`): what a stored session keeps of
    /// its configuration, without its history (`LiveStoredSession` keeps that).
    package var startJSON: JSON {
        var audio: [(String, JSON)] = format.json.map { [("format", $0)] } ?? []
        audio.append(("output", .object([("voice", customVoice ? .object([("id", .string(voice))]) : .string(voice))])))
        var fields: [(String, JSON)] = [("model", .string(model)), ("audio", .object(audio)), ("delegation", delegation.json), ("store", .bool(store))]
        if let instructions { fields.append(("instructions", .string(instructions))) }
        if let safetyIdentifier { fields.append(("safety_identifier", .string(safetyIdentifier))) }
        if let client { fields.append(("client", client)) }
        return .object(fields)
    }

    /// As `session.started` and `.updated` write it (`SessionResource`).
    package func resource(id: String, expiresAt: Int) -> JSON {
        var fields: [(String, JSON)] = [
            ("id", .string(id)), ("expires_at", .int(expiresAt)), ("model", .string(model)), ("status", .string("active")),
            ("audio", .object((format.json.map { [("format", $0)] } ?? [])
                              + [("output", .object([("voice", customVoice ? .object([("id", .string(voice))]) : .string(voice))]))])),
            ("delegation", delegation.json),
            ("instructions", .string(instructions ?? Self.defaultInstructions)),
            ("store", .bool(store)),
            ("triggers", .array([])),
        ]
        if !input.isEmpty { fields.append(("input", .array(input.map(\.json)))) }
        if let safetyIdentifier { fields.append(("safety_identifier", .string(safetyIdentifier))) }
        if let client { fields.append(("client", client)) }
        return .object(fields)
    }
}

/// `audio.format` on a Live WebSocket: PCM at 24 or 16 kHz, or G.711 at 8 kHz; or a call's,
/// negotiated on its media (WebRTC's Opus, SIP's G.711), which the client does not choose here.
package enum LiveAudioFormat: Sendable, Equatable {
    case pcm24k, pcm16k, pcmu, pcma, negotiated

    package static func parse(_ format: EventFields) throws(ProtocolError) -> LiveAudioFormat {
        try format.refuseUnknown(["type", "rate"])
        let type = try format.requiredString("type")
        let rate = try format.integer("rate", in: 1...1_000_000)
        switch type {
        case "audio/pcm":
            guard let rate else { throw format.missing("rate") }
            switch rate {
            case 24_000: return .pcm24k
            case 16_000: return .pcm16k
            default: throw format.invalid("rate", "must be 24000 or 16000 for audio/pcm, got \(rate)")
            }
        case "audio/pcmu", "audio/pcma":
            if let rate, rate != 8_000 { throw format.invalid("rate", "must be 8000 for \(type), got \(rate)") }
            return type == "audio/pcmu" ? .pcmu : .pcma
        default:
            throw format.invalid("type", "must be 'audio/pcm', 'audio/pcmu' or 'audio/pcma', got '\(type)'")
        }
    }

    /// The engine's format for both directions; nil: the call's, set by its carrier.
    package var engineFormat: RealtimeAudioFormat? {
        switch self {
        case .pcm24k: .pcm16
        case .pcm16k: .pcm16k
        case .pcmu: .pcmu
        case .pcma: .pcma
        case .negotiated: nil
        }
    }

    package var json: JSON? {
        switch self {
        case .pcm24k: .object([("type", .string("audio/pcm")), ("rate", .int(24_000))])
        case .pcm16k: .object([("type", .string("audio/pcm")), ("rate", .int(16_000))])
        case .pcmu: .object([("type", .string("audio/pcmu")), ("rate", .int(8_000))])
        case .pcma: .object([("type", .string("audio/pcma")), ("rate", .int(8_000))])
        case .negotiated: nil
        }
    }

    /// Bytes a second on the wire: what bounds a fixture's length.
    package var bytesPerSecond: Int {
        switch self {
        case .pcm24k, .negotiated: 48_000
        case .pcm16k: 32_000
        case .pcmu, .pcma: 8_000
        }
    }
}
