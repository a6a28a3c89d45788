import Codec
import JSON

/// An audio encoding on the wire, for input (what the client sends) or output (what it gets back).
public enum RealtimeAudioFormat: Sendable, Equatable {
    /// 16-bit little-endian mono PCM at 24 kHz, base64 in JSON events: the Realtime API's format.
    case pcm16
    /// The same at 16 kHz: GPT-Live's `audio/pcm` at 16000 (the Realtime API has no such format).
    case pcm16k
    /// Opus packets at 48 kHz, one per binary WebSocket frame: Parley's `/ws` endpoint only.
    case opus
    /// G.711 µ-law at 8 kHz, one byte a sample, base64 in JSON events: the telephone's format.
    case pcmu
    /// G.711 A-law at 8 kHz, likewise.
    case pcma

    /// The rate on the wire.
    public var sampleRate: Int {
        switch self {
        case .pcm16: 24_000
        case .pcm16k: 16_000
        case .opus: 48_000
        case .pcmu, .pcma: G711.sampleRate
        }
    }

    /// The rate the session hears this input at, once decoded: where the voice activity detector,
    /// the input buffer and the audio clock work. pcm16 and Opus come down to 16 kHz, wideband
    /// speech and the rate of pocketsphinx's en-us model; nothing is gained above it. G.711 stays
    /// at its 8 kHz: upsampling adds no speech, only samples to carry, and a recogniser that wants
    /// more resamples for itself.
    public var engineRate: Int {
        switch self {
        case .pcm16, .pcm16k, .opus: 16_000
        case .pcmu, .pcma: G711.sampleRate
        }
    }

    /// Bytes of one sample on the wire, for the formats whose samples are whole bytes (PCM,
    /// G.711); nil for Opus, whose packets are not.
    public var bytesPerSample: Int? {
        switch self {
        case .pcm16, .pcm16k: 2
        case .pcmu, .pcma: 1
        case .opus: nil
        }
    }

    /// The G.711 law, for the two G.711 formats.
    public var g711Law: G711.Law? {
        switch self {
        case .pcmu: .muLaw
        case .pcma: .aLaw
        case .pcm16, .pcm16k, .opus: nil
        }
    }

    /// The beta's name, which error messages use too.
    package var betaName: String {
        switch self {
        case .pcm16: "pcm16"
        case .pcm16k: "pcm16 at 16 kHz"
        case .opus: "opus"
        case .pcmu: "g711_ulaw"
        case .pcma: "g711_alaw"
        }
    }
}

package extension RealtimeAudioFormat {
    /// GA: `{"type":"audio/pcm","rate":24000}`, `{"type":"audio/pcmu"}` (G.711 has one rate, and
    /// OpenAI's objects for it carry none); beta: `"pcm16"`, `"g711_ulaw"`.
    func json(dialect: Dialect) -> JSON {
        switch (self, dialect) {
        case (.pcm16, .ga), (.pcm16k, .ga): .object([("type", .string("audio/pcm")), ("rate", .int(sampleRate))])
        case (.opus, .ga): .object([("type", .string("audio/opus")), ("rate", .int(sampleRate))])
        case (.pcmu, .ga): .object([("type", .string("audio/pcmu"))])
        case (.pcma, .ga): .object([("type", .string("audio/pcma"))])
        case (_, .beta): .string(betaName)
        }
    }
}
