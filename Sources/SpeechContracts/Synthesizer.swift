import Models
import Loop

/// What a synthesis reports: audio as it is produced, then exactly one of `finished` or `failed`.
public enum SynthesisEvent: Sendable, Equatable {
    /// Mono samples at `sampleRate`, ready to resample and encode for the client.
    case audio([Int16], sampleRate: Int)
    case finished
    case failed(ModelError)
}

/// Speech synthesis, sentence by sentence as a reply streams. The speech issue brings the
/// providers (espeak-ng, OpenAI-compatible speech); until then replies are text only. `cancel()`
/// on the returned call stops it (barge-in).
public protocol Synthesizer: Sendable {
    var name: String { get }
    func speak(_ text: String, voice: SpeechVoice, urgency: SynthesisUrgency, on loop: EventLoop, _ onEvent: @escaping (SynthesisEvent) -> Void) -> any ModelCall
}

/// Whether a listener waits on a sentence's sound now or it is made ahead of them. A reply's first
/// sentence is `.waited`: the turn's first sound waits on it. The later ones are `.ahead`: asked
/// for a few seconds before they play (`SpeechOutput.synthesisAheadMs`), so a synthesiser that
/// queues work (the speech helper) serves the turns being waited on before them.
public enum SynthesisUrgency: Sendable, Equatable {
    case waited
    case ahead
}

/// Who speaks a reply, how fast and in which language: the session's `voice` (the Realtime API's
/// names, which each synthesiser maps onto its own voices), `speed` (0.25 to 1.5, 1 the voice's
/// own pace) and the session's language, set or found (ISO-639-1; nil: English).
public struct SpeechVoice: Sendable, Equatable {
    public var name: String
    public var speed: Double
    public var language: String?

    public init(name: String, speed: Double = 1, language: String? = nil) {
        self.name = name
        self.speed = speed
        self.language = language
    }

    /// Whether the reply is to be spoken in a language other than English.
    public var foreign: Bool { language.map { $0 != "en" } ?? false }
}
