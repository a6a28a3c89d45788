import Models
import SpeechContracts
/// A session's settings: what `session.created` and `session.updated` report and `session.update`
/// changes.
///
/// Defaults follow the Realtime API's except for the output modality: replies are text until a
/// synthesizer is configured, so a client that asks for nothing gets what the server can give.
public struct SessionConfiguration: Sendable, Equatable {
    /// Instructions are held for the session's life and sent with every model call: bounded like
    /// the conversation history.
    public static let maxInstructionBytes = 32 * 1024
    /// As the Realtime API: an integer from 1 to 4096, or "inf" (nil here).
    public static let maxOutputTokensRange = 1...4096
    public static let maxVoiceBytes = 64

    /// The system prompt sent before the conversation; empty for none.
    public var instructions = ""
    public var outputModalities: OutputModalities = .text
    public var voice = "alloy"
    /// How fast replies are spoken (the Realtime API's `speed`): 1 is the voice's own pace.
    public var speed = 1.0
    /// The API's range for `speed`.
    public static let speedRange = 0.25...1.5
    /// Parley's extension: after each turn, a `parley.turn.timeline` event with its stages, for a
    /// session whose `include` names it (clients that do not ask never see the event).
    public var includesTimeline = false
    public static let timelineInclude = "parley.turn.timeline"
    public var inputAudioFormat: RealtimeAudioFormat = .pcm16
    public var outputAudioFormat: RealtimeAudioFormat = .pcm16
    /// Set for a WebRTC call, whose audio is Opus on its media track in both directions: the
    /// formats a `session.update` names are then not applied.
    public var audioFormatsFixed = false
    /// nil: the client commits turns itself (`input_audio_buffer.commit`, then `response.create`).
    public var turnDetection: ServerVAD? = ServerVAD()
    /// nil: no limit beyond the model's own ("inf").
    public var maxOutputTokens: Int?
    /// The functions the model may call, shared among sessions that declare the same ones.
    public var tools: ToolSet?
    /// The MCP servers whose tools the model may call (`{"type": "mcp"}` entries of `tools`).
    public var mcpServers: [MCPServerEntry] = []
    public var toolChoice: ToolChoice = .auto
    /// Parley's echo guard (`audio.input.echo_guard`, or the beta's `input_audio_echo_guard`): the
    /// client plays replies with no echo cancellation of its own, so the server discounts the
    /// reply's audio from what it hears (`EchoGuard`). nil: the client has not said, and the
    /// endpoint's default holds (on for /twilio, the server's `--echo-guard` for the others); only
    /// then is the field left out of `session.created` and `session.updated`.
    public var echoGuard: Bool?
    /// Parley's `recording` extension: the call is recorded (both sides, `Recordings`) from the
    /// moment the client asks, on a server that allows it. nil until a client says, and only then
    /// reported, as `echoGuard`.
    public var recording: Bool?
    /// `realtime`: a conversation with responses; `transcription`: the input's turns transcribed
    /// and nothing else (no response, no model call). Fixed when the session opens
    /// (`?intent=transcription`, or a client secret's `type`).
    public var type: SessionType = .realtime
    /// `noise_reduction`: the input is denoised before the VAD and the recogniser hear it
    /// (`Denoiser`); nil: it is not.
    public var noiseReduction: NoiseReduction?
    /// `audio.input.transcription`'s `model` and `language`: which of the server's recognisers
    /// hears the session's turns, and in which language (`Transcriber.model(for:)`).
    public var transcription = TranscriptionChoice()
    /// The language the recogniser found the session's turns in when it set none
    /// (`TranscriptionEvent.language`): the turns after it are heard in it, until the session sets
    /// one. Not reported (`transcription.language` is what the client set).
    public var heardLanguage: String?

    /// The session's language: the one it set or, failing that, the one found (nil: neither).
    public var language: String? { transcription.language ?? heardLanguage }

    /// What each turn asks of the recogniser: the session's choice, in its `language`.
    public var hearing: TranscriptionChoice { TranscriptionChoice(model: transcription.model, language: language) }

    /// `truncation` (GA): what goes when the conversation outgrows its budget (see
    /// `ConversationHistory`).
    public var truncation = Truncation.auto
    /// Parley's `max_history_bytes` extension: a smaller text budget for this session's
    /// conversation than the server's (`--max-history-bytes`); nil: the server's. Reported only
    /// once set, so clients that never set it see the API's session object unchanged.
    public var maxHistoryBytes: Int?
    /// The smallest `max_history_bytes`: room for a few short turns.
    public static let minHistoryBytes = 256

    public enum Truncation: Sendable, Equatable {
        case auto
        case disabled
        /// Truncate to `ratio` (0 to 1) of the budget; `postInstructionsTokens` (the API's
        /// `token_limits.post_instructions`) lowers the budget in tokens.
        case retentionRatio(Double, postInstructionsTokens: Int?)
    }

    /// The Realtime API's noise reduction types (the driver's `Denoiser` serves each, with the
    /// strength its comment explains).
    public enum NoiseReduction: String, Sendable, Equatable, CaseIterable {
        /// A close-talking microphone: a headset, a phone at the mouth.
        case nearField = "near_field"
        /// A laptop's or a room's microphone.
        case farField = "far_field"
    }

    public enum SessionType: String, Sendable, Equatable {
        case realtime
        case transcription
    }

    public init() {}

    /// Applies a `session.update`. All or nothing: a rejected update leaves the settings unchanged.
    /// `allowsOpus` is true on `/ws`, where binary frames carry Opus; `/v1/realtime` has pcm16 and
    /// G.711 (base64 in JSON events, as both endpoints take them).
    public mutating func apply(_ update: SessionUpdate, allowsOpus: Bool) throws(ProtocolError) {
        if !allowsOpus && !audioFormatsFixed {
            for (format, param) in [(update.inputAudioFormat, update.inputAudioFormatParam), (update.outputAudioFormat, update.outputAudioFormatParam)]
            where format == .opus {
                throw ProtocolError(.invalidValue, "'\(param)' opus is only available on Parley's /ws endpoint; use pcm16, g711_ulaw or g711_alaw here", param: param)
            }
        }
        if let type = update.sessionType, type != self.type {
            // The API fixes a session's type when it is made; Parley refuses the switch rather
            // than guess what a conversation turned transcription (or back) should keep.
            if update.fromTranscriptionEvent {
                throw ProtocolError(.invalidValue, "transcription_session.update is for transcription sessions, and this is a realtime one: connect with ?intent=transcription for a transcription session, or use session.update", param: "type")
            }
            throw ProtocolError(.invalidValue, "'session.type' cannot change from '\(self.type.rawValue)' to '\(type.rawValue)': a session keeps the type it was opened with (connect with ?intent=transcription, or a client secret whose session type is 'transcription', for a transcription session)", param: "session.type")
        }
        var next = self
        if let instructions = update.instructions { next.instructions = instructions }
        if let modalities = update.outputModalities { next.outputModalities = modalities }
        if let voice = update.voice { next.voice = voice }
        if let speed = update.speed { next.speed = speed }
        if let timeline = update.includesTimeline { next.includesTimeline = timeline }
        // A WebRTC call's audio is Opus on its media track whatever the session names (clients
        // written for OpenAI's WebRTC send their WebSocket formats all the same).
        if !audioFormatsFixed {
            if let format = update.inputAudioFormat { next.inputAudioFormat = format }
            if let format = update.outputAudioFormat { next.outputAudioFormat = format }
        }
        switch update.turnDetection {
        case nil: break
        case .manual: next.turnDetection = nil
        case .serverVAD(let change):
            // Fields left out keep their current values (or the defaults when VAD was off).
            var vad = next.turnDetection ?? ServerVAD()
            if let v = change.threshold { vad.threshold = v }
            if let v = change.prefixPaddingMs { vad.prefixPaddingMs = v }
            if let v = change.silenceDurationMs { vad.silenceDurationMs = v }
            if let v = change.createResponse { vad.createResponse = v }
            if let v = change.interruptResponse { vad.interruptResponse = v }
            if let v = change.minInterruptionMs { vad.interruption.minDurationMs = v }
            if let v = change.minInterruptionWords { vad.interruption.minWords = v }
            if let v = change.speculativeResponse { vad.speculativeResponse = v }
            // semantic_vad is served by the energy detector: its eagerness sets the silence.
            vad.semanticEagerness = change.semanticEagerness
            if let eagerness = change.semanticEagerness {
                vad.silenceDurationMs = eagerness.silenceMs
                vad.idleTimeoutMs = nil
            } else if let v = change.idleTimeoutMs {
                vad.idleTimeoutMs = v
            }
            next.turnDetection = vad
        }
        switch update.maxOutputTokens {
        case nil: break
        case .unlimited: next.maxOutputTokens = nil
        case .limited(let n): next.maxOutputTokens = n
        }
        if let tools = update.tools { next.tools = tools.tools.isEmpty ? nil : tools }
        if let servers = update.mcpServers { next.mcpServers = servers }
        if let choice = update.toolChoice { next.toolChoice = choice }
        if let guarded = update.echoGuard { next.echoGuard = guarded }
        if let recording = update.recording { next.recording = recording }
        if let truncation = update.truncation { next.truncation = truncation }
        if let bytes = update.maxHistoryBytes { next.maxHistoryBytes = bytes }
        if let choice = update.transcription { next.transcription = choice }
        switch update.noiseReduction {
        case nil: break
        case .off: next.noiseReduction = nil
        case .on(let kind): next.noiseReduction = kind
        }
        if update.tools != nil || update.toolChoice != nil {
            try ToolsField.check(next.toolChoice, against: next.tools, servers: next.mcpServers, param: "session.tool_choice")
        }
        self = next
    }

    /// How a client's audio arrived.
    public enum AudioArrival: Sendable, Equatable {
        /// Base64 in an `input_audio_buffer.append`: this many bytes once decoded, in the session's
        /// input format (pcm16 or G.711).
        case append(bytes: Int)
        /// A binary WebSocket frame: an Opus packet.
        case binaryFrame
    }

    /// Whether audio that arrived so may feed this session: nil when it may, else the error the
    /// client gets. The connection asks before decoding, so refused audio never reaches the engine.
    /// `allowsOpus` as for `apply`.
    public func refusal(of arrival: AudioArrival, allowsOpus: Bool) -> ProtocolError? {
        switch arrival {
        case .append(let bytes):
            if inputAudioFormat == .opus {
                return ProtocolError(.invalidValue, "input_audio_buffer.append carries pcm16 or G.711, but this session's input format is opus: send each Opus packet as a binary frame, or set the input format to pcm16, g711_ulaw or g711_alaw with session.update")
            }
            if inputAudioFormat.bytesPerSample == 2, bytes % 2 != 0 {
                return ProtocolError(.invalidValue, "'audio' must hold whole 16-bit samples (pcm16 is 2 bytes a sample), got \(bytes) bytes", param: "audio")
            }
        case .binaryFrame:
            guard allowsOpus else {
                return ProtocolError(.invalidValue, "binary frames (Opus packets) are accepted on /ws only; send input_audio_buffer.append here")
            }
            guard inputAudioFormat == .opus else {
                return ProtocolError(.invalidValue, "binary frames carry Opus packets, but this session's input format is \(inputAudioFormat.betaName): set the input format to opus with session.update, or send input_audio_buffer.append")
            }
        }
        return nil
    }

    /// Bytes held on the heap beyond the struct itself (strings too long to be stored inline).
    package var heapBytes: Int {
        (instructions.utf8.count > 15 ? instructions.utf8.count : 0) + (voice.utf8.count > 15 ? voice.utf8.count : 0)
    }
}

/// The Realtime API's defaults are the resting settings: a session that has not changed them
/// holds no copy of its own (`SessionEngine.configuration`).
extension SessionConfiguration: RestingState {
    static package let resting = SessionConfiguration()
    package var isResting: Bool { self == .resting }
}
