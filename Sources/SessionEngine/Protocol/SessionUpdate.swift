import JSON
import Models
import SpeechContracts

/// The fields a `session.update` sets; nil leaves a setting as it is.
///
/// Both API generations' shapes are read, whichever dialect the connection speaks: the GA nesting
/// (`output_modalities`, `audio.input.format` as `{"type":"audio/pcm","rate":24000}` or
/// `{"type":"audio/pcmu"}`, `audio.input.turn_detection`, `audio.output.voice`,
/// `max_output_tokens`) and the beta's flat fields (`modalities`, `input_audio_format: "pcm16"`
/// or `"g711_ulaw"`, `turn_detection`, `voice`,
/// `max_response_output_tokens`), and `tools` with `tool_choice`; `type` (`realtime` or
/// `transcription`) and noise reduction (`audio.input.noise_reduction`, the beta's
/// `input_audio_noise_reduction`). Fields Parley does not act on (temperature, the transcription
/// model, language and prompt) are checked and ignored, so SDK defaults do not fail.
public struct SessionUpdate: Sendable, Equatable {
    public enum TurnDetectionChange: Sendable, Equatable {
        /// `turn_detection: null`: the client commits turns itself.
        case manual
        case serverVAD(ServerVADChange)
    }

    /// Server VAD fields present in the update; the rest keep their values.
    public struct ServerVADChange: Sendable, Equatable {
        public var threshold: Double?
        public var prefixPaddingMs: Int?
        public var silenceDurationMs: Int?
        public var createResponse: Bool?
        public var interruptResponse: Bool?
        /// `semantic_vad` and its eagerness (nil: `server_vad`).
        public var semanticEagerness: ServerVAD.Eagerness?
        public var idleTimeoutMs: Int?
        /// Parley's `interruption` extension: the fields given (nil: as they are).
        public var minInterruptionMs: Int?
        public var minInterruptionWords: Int?
        /// Parley's `speculative_response` extension (see `ServerVAD.speculativeResponse`).
        public var speculativeResponse: Bool?

        public init(threshold: Double? = nil, prefixPaddingMs: Int? = nil, silenceDurationMs: Int? = nil,
                    createResponse: Bool? = nil, interruptResponse: Bool? = nil, semanticEagerness: ServerVAD.Eagerness? = nil,
                    idleTimeoutMs: Int? = nil, interruption: (minDurationMs: Int?, minWords: Int?) = (nil, nil), speculativeResponse: Bool? = nil) {
            self.speculativeResponse = speculativeResponse
            minInterruptionMs = interruption.minDurationMs
            minInterruptionWords = interruption.minWords
            self.semanticEagerness = semanticEagerness
            self.idleTimeoutMs = idleTimeoutMs
            self.threshold = threshold
            self.prefixPaddingMs = prefixPaddingMs
            self.silenceDurationMs = silenceDurationMs
            self.createResponse = createResponse
            self.interruptResponse = interruptResponse
        }
    }

    /// `noise_reduction`: `null` turns it off, an object with a `type` turns it on.
    public enum NoiseReductionChange: Sendable, Equatable {
        case off
        case on(SessionConfiguration.NoiseReduction)
    }

    public enum TokenLimit: Sendable, Equatable {
        case limited(Int)
        /// "inf"
        case unlimited
    }

    public var instructions: String?
    public var outputModalities: OutputModalities?
    public var voice: String?
    /// `audio.output.speed` (GA) or `speed` (beta): how fast replies are spoken, 0.25 to 1.5.
    public var speed: Double?
    /// `include` named `parley.turn.timeline`: the session wants each turn's stage timings.
    public var includesTimeline: Bool?
    public var inputAudioFormat: RealtimeAudioFormat?
    public var outputAudioFormat: RealtimeAudioFormat?
    public var turnDetection: TurnDetectionChange?
    public var maxOutputTokens: TokenLimit?
    /// The functions the model may call (an empty set removes them all).
    public var tools: ToolSet?
    /// The MCP servers of `tools` (nil when `tools` is absent; empty removes them all).
    public var mcpServers: [MCPServerEntry]?
    public var toolChoice: ToolChoice?
    /// Parley's echo guard extension: `input_audio_echo_guard` (beta), `audio.input.echo_guard` (GA).
    public var echoGuard: Bool?
    /// `type`: the kind of session the update is for (`transcription_session.update` is always
    /// for a transcription session).
    public var sessionType: SessionConfiguration.SessionType?
    /// The update came as the beta's `transcription_session.update` (for the error that names it).
    public var fromTranscriptionEvent = false
    public var noiseReduction: NoiseReductionChange?
    /// `audio.input.transcription` (the beta's `input_audio_transcription`): the recogniser's model
    /// and the session's language; an object given replaces the last (`null` is ignored: a
    /// session's turns are always transcribed).
    public var transcription: TranscriptionChoice?
    public var truncation: SessionConfiguration.Truncation?
    /// Parley's extension: the session's history budget in bytes, at most the server's.
    public var maxHistoryBytes: Int?
    /// Parley's extension: record this call (`recording`), where the server allows it.
    public var recording: Bool?
    /// Where the formats were given, for an error that names the field.
    package var inputAudioFormatParam = "session.input_audio_format"
    package var outputAudioFormatParam = "session.output_audio_format"

    public init(instructions: String? = nil, outputModalities: OutputModalities? = nil, voice: String? = nil,
                inputAudioFormat: RealtimeAudioFormat? = nil, outputAudioFormat: RealtimeAudioFormat? = nil,
                turnDetection: TurnDetectionChange? = nil, maxOutputTokens: TokenLimit? = nil) {
        self.instructions = instructions
        self.outputModalities = outputModalities
        self.voice = voice
        self.inputAudioFormat = inputAudioFormat
        self.outputAudioFormat = outputAudioFormat
        self.turnDetection = turnDetection
        self.maxOutputTokens = maxOutputTokens
    }

    /// A session object (`session.update`'s `session`) given outside an event: an operator's
    /// settings for phone calls, say.
    public static func parse(session json: JSON) throws(ProtocolError) -> SessionUpdate {
        guard json.object != nil else { throw ProtocolError(.invalidValue, "the session must be a JSON object", param: "session") }
        return try parse(EventFields(json, path: "session"))
    }

    package static func parse(_ session: EventFields) throws(ProtocolError) -> SessionUpdate {
        var update = SessionUpdate()
        if let type = try session.string("type") {
            guard let known = SessionConfiguration.SessionType(rawValue: type) else {
                throw session.invalid("type", "must be 'realtime' or 'transcription', got '\(type)'")
            }
            update.sessionType = known
        }
        if let instructions = try session.string("instructions") {
            guard instructions.utf8.count <= SessionConfiguration.maxInstructionBytes else {
                throw session.invalid("instructions", "is longer than \(SessionConfiguration.maxInstructionBytes) bytes")
            }
            update.instructions = instructions
        }
        update.outputModalities = try modalities(session, "modalities")
        if let ga = try modalities(session, "output_modalities") { update.outputModalities = ga }
        update.voice = try voice(session, "voice")
        update.speed = try session.number("speed", in: SessionConfiguration.speedRange)
        update.inputAudioFormat = try format(session, "input_audio_format")
        update.outputAudioFormat = try format(session, "output_audio_format")
        update.turnDetection = try turnDetection(session)
        update.maxOutputTokens = try tokenLimit(session, "max_response_output_tokens")
        if let ga = try tokenLimit(session, "max_output_tokens") { update.maxOutputTokens = ga }
        update.tools = try ToolsField.tools(session)
        update.mcpServers = try ToolsField.servers(session)
        if let include = try session.array("include") {
            // The API's own values are accepted and ignored; Parley's one is a request for its timeline.
            update.includesTimeline = include.contains { $0.string == SessionConfiguration.timelineInclude }
        }
        update.toolChoice = try ToolsField.choice(session)
        update.truncation = try truncation(session, "truncation")
        update.maxHistoryBytes = try session.integer("max_history_bytes", in: SessionConfiguration.minHistoryBytes...Int(Int32.max))
        update.recording = try session.bool("recording")
        update.echoGuard = try session.bool("input_audio_echo_guard")
        update.noiseReduction = try noiseReduction(session, "input_audio_noise_reduction")
        update.transcription = try transcription(session, "input_audio_transcription")

        if let audio = try session.object("audio") {
            if let input = try audio.object("input") {
                if let format = try format(input, "format") {
                    update.inputAudioFormat = format
                    update.inputAudioFormatParam = input.name("format")
                }
                if let change = try turnDetection(input) { update.turnDetection = change }
                if let guarded = try input.bool("echo_guard") { update.echoGuard = guarded }
                if let change = try noiseReduction(input, "noise_reduction") { update.noiseReduction = change }
                if let choice = try transcription(input, "transcription") { update.transcription = choice }
            }
            if let output = try audio.object("output") {
                if let format = try format(output, "format") {
                    update.outputAudioFormat = format
                    update.outputAudioFormatParam = output.name("format")
                }
                if let voice = try voice(output, "voice") { update.voice = voice }
                if let speed = try output.number("speed", in: SessionConfiguration.speedRange) { update.speed = speed }
            }
        }
        return update
    }

    /// The beta's `transcription_session.update`: the beta's flat fields (`input_audio_format`,
    /// `input_audio_transcription`, `turn_detection`, `input_audio_noise_reduction`), for a
    /// transcription session.
    package static func parseTranscription(_ session: EventFields) throws(ProtocolError) -> SessionUpdate {
        var update = try parse(session)
        if let type = update.sessionType, type != .transcription {
            throw session.invalid("type", "must be 'transcription' in transcription_session.update, got '\(type.rawValue)'")
        }
        update.sessionType = .transcription
        update.fromTranscriptionEvent = true
        return update
    }

    /// `noise_reduction`: `null` (off) or `{"type": "near_field" | "far_field"}`; the API's
    /// optional `strength` is accepted and ignored.
    private static func noiseReduction(_ fields: EventFields, _ key: String) throws(ProtocolError) -> NoiseReductionChange? {
        if fields.isNull(key) { return .off }
        guard let object = try fields.object(key) else { return nil }
        typealias Kind = SessionConfiguration.NoiseReduction
        guard let type = try object.choice("type", Kind.allCases.map(\.rawValue)) else { throw object.missing("type") }
        _ = try object.number("strength", in: 0...1_000)
        return Kind(rawValue: type).map(NoiseReductionChange.on)
    }

    /// `truncation`: `"auto"`, `"disabled"`, or `{"type": "retention_ratio", "retention_ratio": r,
    /// "token_limits": {"post_instructions": n}}`.
    private static func truncation(_ fields: EventFields, _ key: String) throws(ProtocolError) -> SessionConfiguration.Truncation? {
        guard fields.has(key), !fields.isNull(key) else { return nil }
        if let word = try? fields.string(key) {
            switch word {
            case "auto": return .auto
            case "disabled": return .disabled
            default: throw fields.invalid(key, "must be 'auto', 'disabled' or a retention_ratio object, got '\(word)'")
            }
        }
        guard let object = try fields.object(key) else { return nil }
        guard try object.choice("type", ["retention_ratio"]) != nil else { throw object.missing("type") }
        guard let ratio = try object.number("retention_ratio", in: 0...1) else { throw object.missing("retention_ratio") }
        let limit = try object.object("token_limits")?.integer("post_instructions", in: 1...Int(Int32.max))
        return .retentionRatio(ratio, postInstructionsTokens: limit)
    }

    /// `transcription` / `input_audio_transcription`: `model` (any name: one the server does not offer is heard by its own) and `language`
    /// (ISO-639-1); `prompt` is checked and ignored.
    private static func transcription(_ fields: EventFields, _ key: String) throws(ProtocolError) -> TranscriptionChoice? {
        guard let object = try fields.object(key) else { return nil }
        _ = try object.string("prompt")
        let model = try object.string("model")
        if let model, model.isEmpty || model.utf8.count > TranscriptionChoice.maxModelBytes {
            throw object.invalid("model", "must be a model name of 1 to \(TranscriptionChoice.maxModelBytes) bytes")
        }
        let language = try object.string("language")
        if let language, !TranscriptionChoice.isLanguageCode(language) {
            throw object.invalid("language", "must be an ISO-639-1 code such as 'en', 'es' or 'de', got '\(language)'")
        }
        return TranscriptionChoice(model: model, language: language)
    }

    package static func modalities(_ fields: EventFields, _ key: String) throws(ProtocolError) -> OutputModalities? {
        guard let list = try fields.array(key) else { return nil }
        var modalities: OutputModalities = []
        for item in list {
            switch item.string {
            case "text": modalities.insert(.text)
            case "audio": modalities.insert(.audio)
            default: throw fields.invalid(key, "may hold only 'text' and 'audio', got \(item)")
            }
        }
        guard !modalities.isEmpty else { throw fields.invalid(key, "must not be empty") }
        return modalities
    }

    private static func voice(_ fields: EventFields, _ key: String) throws(ProtocolError) -> String? {
        guard let voice = try fields.string(key) else { return nil }
        guard !voice.isEmpty, voice.utf8.count <= SessionConfiguration.maxVoiceBytes else {
            throw fields.invalid(key, "must be a voice name of 1 to \(SessionConfiguration.maxVoiceBytes) bytes")
        }
        return voice
    }

    /// A format as the beta's string (`"pcm16"`, `"g711_ulaw"`) or the GA's object
    /// (`{"type":"audio/pcm","rate":24000}`, `{"type":"audio/pcmu"}`, whose rate may be given as 8000).
    private static func format(_ fields: EventFields, _ key: String) throws(ProtocolError) -> RealtimeAudioFormat? {
        if let object = try? fields.object(key) {
            let type = try object.requiredString("type")
            let format: RealtimeAudioFormat
            switch type {
            case "audio/pcm": format = .pcm16
            case "audio/opus": format = .opus
            case "audio/pcmu": format = .pcmu
            case "audio/pcma": format = .pcma
            default:
                throw object.invalid("type", "must be 'audio/pcm', 'audio/pcmu' or 'audio/pcma' (or 'audio/opus' on /ws), got '\(type)'")
            }
            if let rate = try object.integer("rate", in: 1...1_000_000), rate != format.sampleRate {
                throw object.invalid("rate", "must be \(format.sampleRate) for \(type), got \(rate)")
            }
            return format
        }
        guard let name = try fields.string(key) else { return nil }
        switch name {
        case "pcm16": return .pcm16
        case "opus": return .opus
        case "g711_ulaw": return .pcmu
        case "g711_alaw": return .pcma
        default: throw fields.invalid(key, "must be 'pcm16', 'g711_ulaw' or 'g711_alaw' (or 'opus' on /ws), got '\(name)'")
        }
    }

    private static func turnDetection(_ fields: EventFields) throws(ProtocolError) -> TurnDetectionChange? {
        if fields.isNull("turn_detection") { return .manual }
        guard let vad = try fields.object("turn_detection") else { return nil }
        // Parley has one detector. `semantic_vad` (which SDKs may send by default) is served by
        // it rather than refused, since refusing would reject the whole update, instructions and all.
        if let type = try vad.string("type"), type != "server_vad", type != "semantic_vad" {
            throw vad.invalid("type", "must be 'server_vad' or turn_detection null (manual turns), got '\(type)'")
        }
        let semantic = try vad.string("type") == "semantic_vad"
        var eagerness: ServerVAD.Eagerness?
        if semantic {
            let name = try vad.choice("eagerness", ServerVAD.Eagerness.allCases.map(\.rawValue)) ?? "auto"
            eagerness = ServerVAD.Eagerness(rawValue: name)
        }
        return .serverVAD(ServerVADChange(
            threshold: try vad.number("threshold", in: ServerVAD.thresholdRange),
            prefixPaddingMs: try vad.integer("prefix_padding_ms", in: ServerVAD.prefixPaddingRange),
            silenceDurationMs: try vad.integer("silence_duration_ms", in: ServerVAD.silenceDurationRange),
            createResponse: try vad.bool("create_response"),
            interruptResponse: try vad.bool("interrupt_response"),
            semanticEagerness: eagerness,
            idleTimeoutMs: semantic ? nil : try vad.integer("idle_timeout_ms", in: ServerVAD.idleTimeoutRange),
            interruption: try interruption(vad),
            speculativeResponse: try vad.bool("speculative_response")))
    }

    /// Parley's extension `turn_detection.interruption`: `{"min_duration_ms": 500, "min_words": 3}`.
    private static func interruption(_ vad: EventFields) throws(ProtocolError) -> (Int?, Int?) {
        guard let object = try vad.object("interruption") else { return (nil, nil) }
        typealias S = ReplyInterruption.Settings
        return (try object.integer("min_duration_ms", in: S.minDurationRange), try object.integer("min_words", in: S.minWordsRange))
    }

    package static func tokenLimit(_ fields: EventFields, _ key: String) throws(ProtocolError) -> TokenLimit? {
        if (try? fields.string(key)) == "inf" { return .unlimited }
        let range = SessionConfiguration.maxOutputTokensRange
        guard fields.has(key), !fields.isNull(key) else { return nil }
        guard let n = try? fields.integer(key, in: range) else {
            throw fields.invalid(key, "must be a whole number from \(range.lowerBound) to \(range.upperBound) or 'inf'")
        }
        return .limited(n)
    }
}
