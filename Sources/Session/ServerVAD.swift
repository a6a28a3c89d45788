import JSON

/// Server-side turn detection settings (`turn_detection: {"type": "server_vad", ...}`): the server
/// finds where speech starts and stops, commits the audio and, by default, answers.
public struct ServerVAD: Sendable, Equatable {
    /// 0...1: how far above the background noise audio must rise to count as speech; higher needs
    /// louder speech (see `VoiceActivityDetector` for the mapping to decibels).
    public var threshold = 0.5
    /// Audio kept before the detected start, so the first syllable is not clipped.
    public var prefixPaddingMs = 300
    /// Non-speech needed to end a turn.
    public var silenceDurationMs = 500
    /// Start a response when a turn ends.
    public var createResponse = true
    /// Cancel the response in flight when the user starts speaking (barge-in).
    public var interruptResponse = true

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
}

extension ServerVAD {
    var json: JSON {
        .object([
            ("type", .string("server_vad")),
            ("threshold", .number(threshold)),
            ("prefix_padding_ms", .int(prefixPaddingMs)),
            ("silence_duration_ms", .int(silenceDurationMs)),
            ("create_response", .bool(createResponse)),
            ("interrupt_response", .bool(interruptResponse)),
        ])
    }
}
