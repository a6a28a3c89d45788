import JSON

/// Server-side turn detection settings (`turn_detection: {"type": "server_vad", ...}`): the server
/// finds where speech starts and stops, commits the audio and, by default, answers.
public struct ServerVAD: Sendable, Equatable {
    /// 0...1: with Silero, the speech probability a 32 ms window needs (`SpeechProbabilityDetector`);
    /// with the energy detector, how far above the background noise audio must rise to count as
    /// speech, higher needing louder speech (see `VoiceActivityDetector` for the mapping to decibels).
    public var threshold = 0.5
    /// Audio kept before the detected start, so the first syllable is not clipped.
    public var prefixPaddingMs = 300
    /// Non-speech needed to end a turn.
    public var silenceDurationMs = 500
    /// Start a response when a turn ends.
    public var createResponse = true
    /// Cancel the response in flight when the user starts speaking (barge-in).
    public var interruptResponse = true
    /// Set when the client asked for `semantic_vad`: Parley has no semantic model, so its energy
    /// detector serves it, the eagerness choosing how much silence ends a turn (`silenceMs`).
    public var semanticEagerness: Eagerness?
    /// With server VAD: after a response, this long without the user speaking commits the silence
    /// as a turn and answers it (`input_audio_buffer.timeout_triggered`); nil: never.
    public var idleTimeoutMs: Int?
    /// Parley's extension: when speech during a spoken reply pauses it, and when it becomes a
    /// barge-in (see `ReplyInterruption`).
    public var interruption = ReplyInterruption.Settings()

    /// `semantic_vad`'s `eagerness`, and the silence that ends a turn for each: low waits longest
    /// (the user may pause mid-thought), high answers soonest; auto is medium, as in the API.
    public enum Eagerness: String, Sendable, Equatable, CaseIterable {
        case low, medium, high, auto

        var silenceMs: Int {
            switch self {
            case .low: 1000
            case .medium, .auto: 500
            case .high: 250
            }
        }
    }

    public init(threshold: Double = 0.5, prefixPaddingMs: Int = 300, silenceDurationMs: Int = 500,
                createResponse: Bool = true, interruptResponse: Bool = true) {
        self.threshold = threshold
        self.prefixPaddingMs = prefixPaddingMs
        self.silenceDurationMs = silenceDurationMs
        self.createResponse = createResponse
        self.interruptResponse = interruptResponse
    }

    static let thresholdRange = 0.0...1.0
    static let prefixPaddingRange = 0...10_000
    static let silenceDurationRange = 0...10_000
    static let idleTimeoutRange = 5_000...30_000
}

extension ServerVAD {
    var json: JSON {
        var json = apiJSON
        // The extension is reported only once a client has changed it: clients that do not know it
        // (the SDKs, which check what they read) never see a field the API does not have.
        if !interruption.isDefault, case .object(var members) = json {
            members.append(("interruption", .object([
                ("min_duration_ms", .int(interruption.minDurationMs)),
                ("min_words", .int(interruption.minWords)),
            ])))
            json = .object(members)
        }
        return json
    }

    private var apiJSON: JSON {
        if let eagerness = semanticEagerness {
            return .object([
                ("type", .string("semantic_vad")),
                ("eagerness", .string(eagerness.rawValue)),
                ("create_response", .bool(createResponse)),
                ("interrupt_response", .bool(interruptResponse)),
            ])
        }
        return .object([
            ("type", .string("server_vad")),
            ("threshold", .number(threshold)),
            ("prefix_padding_ms", .int(prefixPaddingMs)),
            ("silence_duration_ms", .int(silenceDurationMs)),
            ("idle_timeout_ms", idleTimeoutMs.map(JSON.int) ?? .null),
            ("create_response", .bool(createResponse)),
            ("interrupt_response", .bool(interruptResponse)),
        ])
    }
}
