import Models
import Loop
import SpeechContracts

/// The embedded synthesiser: espeak-ng, on the speech worker pool. A sentence comes back whole
/// (espeak-ng speaks one in a few milliseconds); the reply is spoken sentence by sentence as the
/// model streams it, so the first audio goes out before the reply is complete.
public struct EspeakSynthesizer: Synthesizer {
    public let name = "espeak-ng"
    let pool: WorkerPool
    public let wordsPerMinute: Int

    public init(pool: WorkerPool, wordsPerMinute: Int = 165) {
        self.pool = pool
        self.wordsPerMinute = wordsPerMinute
    }

    /// Opens libespeak-ng (dlopen), so that a server told to speak with it says at start when it
    /// cannot; a server that never speaks with it never maps it.
    public static func loadLibrary() throws(SpeechLibrary.LoadError) {
        try SpeechLibrary.espeak.load()
    }

    /// The Realtime API's voice names, mapped onto espeak-ng's English variants; in another
    /// language, onto that language's voice with the variant of the same kind (espeak-ng names
    /// most of its hundred languages by their ISO-639-1 code; these few by a region).
    static func espeakVoice(_ voice: String, language: String? = nil) -> String {
        let variant = switch voice {
        case "nova", "shimmer", "coral", "sage": "+f3"
        case "onyx", "ash", "verse": "+m3"
        default: ""
        }
        guard let language, language != "en" else { return voice == "fable" ? "en-gb" : "en-us" + variant }
        let regional = ["fr": "fr-fr", "pt": "pt-br", "zh": "cmn", "yue": "yue"]
        return (regional[language] ?? language) + variant
    }

    public func speak(_ text: String, voice: SpeechVoice, urgency: SynthesisUrgency, on loop: EventLoop, _ onEvent: @escaping (SynthesisEvent) -> Void) -> any ModelCall {
        // espeak-ng speaks 80 to 450 words a minute.
        let espeakVoice = Self.espeakVoice(voice.name, language: voice.language), rate = min(450, max(80, Int((Double(wordsPerMinute) * voice.speed).rounded())))
        let ticket = loop.offload(to: pool, { () -> Result<SynthesizedSpeech, Espeak.Failure> in
            let clock = ThreadCPUClock()
            return Espeak.shared.synthesize(text, voice: espeakVoice, wordsPerMinute: rate)
                .map { SynthesizedSpeech(samples: $0.samples, sampleRate: $0.sampleRate, cpuSeconds: clock.elapsed) }
        }, then: { result in
            switch result {
            case .success(let speech):
                if !speech.samples.isEmpty {
                    SpeechMetrics.shared.synthesisRealTimeFactor.observe(seconds: speech.cpuSeconds / (Double(speech.samples.count) / Double(speech.sampleRate)))
                    onEvent(.audio(speech.samples, sampleRate: speech.sampleRate))
                }
                onEvent(.finished)
            case .failure(let failure):
                onEvent(.failed(ModelError(code: "synthesis_failed", message: failure.description)))
            }
        })
        guard let ticket else {
            SpeechMetrics.shared.overloaded.add(1)
            loop.schedule(after: 0) {
                onEvent(.failed(ModelError(code: "overloaded", message: "the speech worker queue is full: the server is overloaded")))
            }
            return CancelledCall()
        }
        return OffloadCall(ticket)
    }
}

struct SynthesizedSpeech: Sendable {
    let samples: [Int16]
    let sampleRate: Int
    let cpuSeconds: Double
}

/// A synthesis on the worker pool; cancelling drops its result.
final class OffloadCall: ModelCall {
    private let ticket: OffloadTicket
    init(_ ticket: OffloadTicket) { self.ticket = ticket }
    func cancel() { ticket.cancel() }
}

/// A call refused before it started; its failure is already on its way.
final class CancelledCall: ModelCall {
    func cancel() {}
}
