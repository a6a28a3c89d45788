import JSON

/// The session object of `session.created` and `session.updated`.
public struct SessionInfo: Sendable, Equatable {
    public var id: String
    /// The model name reported to clients (e.g. "parley-builtin", or the upstream LLM's).
    public var model: String
    public var configuration: SessionConfiguration
    /// The recogniser that transcribes this session's speech (`pocketsphinx`, or an API's model),
    /// nil when spoken turns are not transcribed: what `transcription` reports.
    public var transcriptionModel: String?

    public init(id: String, model: String, configuration: SessionConfiguration, transcriptionModel: String? = nil) {
        self.id = id
        self.model = model
        self.configuration = configuration
        self.transcriptionModel = transcriptionModel
    }

    package func json(dialect: Dialect) -> JSON {
        let c = configuration
        let maxTokens: JSON = c.maxOutputTokens.map(JSON.int) ?? .string("inf")
        let turnDetection = c.turnDetection?.json ?? .null
        let tools = JSON.array((c.tools?.tools.map(\.json) ?? []) + c.mcpServers.map(\.json))
        if c.type == .transcription { return transcriptionJSON(dialect: dialect) }
        switch dialect {
        case .ga:
            return .object([
                ("type", .string("realtime")),
                ("object", .string("realtime.session")),
                ("id", .string(id)),
                ("model", .string(model)),
                ("output_modalities", c.outputModalities.json(dialect: dialect)),
                ("instructions", .string(c.instructions)),
                ("tools", tools),
                ("tool_choice", c.toolChoice.json),
                ("max_output_tokens", maxTokens),
                ("truncation", truncation),
                ("tracing", .null),
                ("audio", .object([
                    ("input", gaAudioInput),
                    ("output", .object([
                        ("format", c.outputAudioFormat.json(dialect: dialect)),
                        ("voice", .string(c.voice)),
                        ("speed", .number(c.speed)),
                    ])),
                ])),
            ] + historyBudget(c) + recording(c))
        case .beta:
            return .object([
                ("id", .string(id)),
                ("object", .string("realtime.session")),
                ("model", .string(model)),
                ("modalities", c.outputModalities.json(dialect: dialect)),
                ("instructions", .string(c.instructions)),
                ("voice", .string(c.voice)),
                ("input_audio_format", c.inputAudioFormat.json(dialect: dialect)),
                ("output_audio_format", c.outputAudioFormat.json(dialect: dialect)),
                ("input_audio_transcription", transcription),
                ("input_audio_noise_reduction", noiseReduction),
                ("turn_detection", turnDetection),
                ("tools", tools),
                ("tool_choice", c.toolChoice.json),
                ("temperature", .number(0.8)),
                ("max_response_output_tokens", maxTokens),
            ] + echoGuard(c, "input_audio_echo_guard") + historyBudget(c) + recording(c))
        }
    }

    /// `transcription`: the recogniser that hears the session (`{"model": …}`, with the
    /// `language` the session set), or null without one.
    private var transcription: JSON {
        guard let transcriptionModel else { return .null }
        let language = configuration.transcription.language.map { [("language", JSON.string($0))] } ?? []
        return .object([("model", .string(transcriptionModel))] + language)
    }

    private var noiseReduction: JSON { configuration.noiseReduction.map { .object([("type", .string($0.rawValue))]) } ?? .null }

    /// GA's `audio.input`, the same in both types of session.
    private var gaAudioInput: JSON {
        let c = configuration
        return .object([
            ("format", c.inputAudioFormat.json(dialect: .ga)),
            ("transcription", transcription),
            ("noise_reduction", noiseReduction),
            ("turn_detection", c.turnDetection?.json ?? .null),
        ] + echoGuard(c, "echo_guard"))
    }

    /// A transcription session's object (`realtime.transcription_session`): only the input's
    /// settings, GA's nested under `audio.input`, the beta's flat.
    private func transcriptionJSON(dialect: Dialect) -> JSON {
        let c = configuration
        switch dialect {
        case .ga:
            return .object([
                ("type", .string("transcription")),
                ("object", .string("realtime.transcription_session")),
                ("id", .string(id)),
                ("audio", .object([("input", gaAudioInput)])),
                ("include", .null),
            ] + recording(c))
        case .beta:
            return .object([
                ("id", .string(id)),
                ("object", .string("realtime.transcription_session")),
                ("input_audio_format", c.inputAudioFormat.json(dialect: dialect)),
                ("input_audio_transcription", transcription),
                ("input_audio_noise_reduction", noiseReduction),
                ("turn_detection", c.turnDetection?.json ?? .null),
                ("include", .null),
            ] + echoGuard(c, "input_audio_echo_guard") + recording(c))
        }
    }

    private var truncation: JSON {
        switch configuration.truncation {
        case .auto: .string("auto")
        case .disabled: .string("disabled")
        case .retentionRatio(let ratio, let limit):
            .object([("type", .string("retention_ratio")), ("retention_ratio", .number(ratio))]
                + (limit.map { [("token_limits", .object([("post_instructions", .int($0))]))] } ?? []))
        }
    }

    /// Parley's `recording`, only once a client has set it (as `echoGuard`).
    private func recording(_ c: SessionConfiguration) -> [(String, JSON)] {
        c.recording.map { [("recording", .bool($0))] } ?? []
    }

    /// Parley's `max_history_bytes`, only once a client has set it (as `echoGuard`).
    private func historyBudget(_ c: SessionConfiguration) -> [(String, JSON)] {
        c.maxHistoryBytes.map { [("max_history_bytes", .int($0))] } ?? []
    }

    /// The echo guard extension, only once a client has set it: clients that do not know it (the
    /// SDKs, whose models are strict) never see a field the API does not have.
    private func echoGuard(_ c: SessionConfiguration, _ key: String) -> [(String, JSON)] {
        c.echoGuard.map { [(key, .bool($0))] } ?? []
    }
}
