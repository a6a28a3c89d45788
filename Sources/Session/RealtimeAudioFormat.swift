import JSON

/// An audio encoding on the wire, for input (what the client sends) or output (what it gets back).
public enum RealtimeAudioFormat: Sendable, Equatable {
    /// 16-bit little-endian mono PCM at 24 kHz, base64 in JSON events: the Realtime API's format.
    case pcm16
    /// Opus packets at 48 kHz, one per binary WebSocket frame: Parley's `/ws` endpoint only.
    case opus

    /// The rate on the wire.
    public var sampleRate: Int {
        switch self {
        case .pcm16: 24_000
        case .opus: 48_000
        }
    }

    /// The rate the session hears this input at, once decoded: where the voice activity detector,
    /// the input buffer and the audio clock work. pcm16 and Opus come down to 16 kHz, wideband
    /// speech and the rate of pocketsphinx's en-us model; nothing is gained above it.
    public var engineRate: Int {
        switch self {
        case .pcm16, .opus: 16_000
        }
    }
}

extension RealtimeAudioFormat {
    /// GA: `{"type":"audio/pcm","rate":24000}`; beta: `"pcm16"`.
    func json(dialect: Dialect) -> JSON {
        switch (self, dialect) {
        case (.pcm16, .ga): .object([("type", .string("audio/pcm")), ("rate", .int(sampleRate))])
        case (.opus, .ga): .object([("type", .string("audio/opus")), ("rate", .int(sampleRate))])
        case (.pcm16, .beta): .string("pcm16")
        case (.opus, .beta): .string("opus")
        }
    }
}
