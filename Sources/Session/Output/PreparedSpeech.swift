import Models
import Loop
import SpeechContracts

/// A speculative reply's first piece of speech, synthesised while the turn is still ending, so
/// that when the reply is used its first sound is already made. The synthesis stage was most of
/// the time from `speech_stopped` to the first reply audio at ten talkers on two cores (a first
/// clause of Piper: 115 to 150 ms alone, 300 to 360 ms beside the decodes; docs/benchmarks.md,
/// "Density"); a speculative reply is usually ready hundreds of milliseconds before its turn ends
/// (the end-of-turn model's verdict and the words' wait), time in which its first clause can be
/// made.
///
/// It holds what the synthesiser has sent so far and, once the reply's `SpeechOutput` takes it
/// for the same text and voice, replays that and forwards the rest as it comes, as if the output
/// had asked for it itself. Not taken (the user went on, the words changed, the output's first
/// sentence differs), it is cancelled: a wasted synthesis, never heard.
final class PreparedSpeech: ModelCall {
    /// What became of it, the label of `parley_prepared_speech_total`.
    enum Outcome: String, Sendable, CaseIterable {
        /// The reply's output took it for its first sentence.
        case used
        /// Cancelled untaken: a synthesis nobody heard.
        case dropped
    }

    let responseID: String
    let text: String
    let voice: SpeechVoice
    private var call: (any ModelCall)?
    /// What the synthesiser sent before the output took it.
    private var held: [SynthesisEvent] = []
    /// The output's handler, once it has taken it.
    private var taker: ((SynthesisEvent) -> Void)?
    private var cancelled = false
    private let loop: EventLoop
    /// Told once, when it is taken or dropped.
    private var ended: ((Outcome) -> Void)?

    /// Starts `text` on `synthesizer` at once, as the reply's first sentence would be (`.waited`:
    /// the turn's first sound will wait on it).
    init(responseID: String, text: String, voice: SpeechVoice, synthesizer: any Synthesizer, on loop: EventLoop,
         ended: ((Outcome) -> Void)? = nil) {
        self.responseID = responseID
        self.text = text
        self.voice = voice
        self.loop = loop
        self.ended = ended
        call = synthesizer.speak(text, voice: voice, urgency: .waited, on: loop) { [weak self] event in self?.synthesized(event) }
    }

    /// Whether it is the sound of `sentence` in `voice`.
    func speaks(_ sentence: String, in voice: SpeechVoice) -> Bool {
        !cancelled && taker == nil && sentence == text && voice == self.voice
    }

    /// The output takes it: what was made is handed over on the loop's next turn (never inside
    /// this call, as a synthesiser's events never come inside `speak`), the rest as it comes.
    /// Returns the call to cancel, as `Synthesizer.speak` does.
    func take(_ onEvent: @escaping (SynthesisEvent) -> Void) -> any ModelCall {
        taker = onEvent
        end(.used)
        _ = loop.schedule(after: 0) { [weak self] in self?.handOver() }
        return self
    }

    private func handOver() {
        while !cancelled, !held.isEmpty, let taker {
            taker(held.removeFirst())
        }
    }

    func cancel() {
        guard !cancelled else { return }
        cancelled = true
        if taker == nil { end(.dropped) }
        held = []
        taker = nil
        call?.cancel()
        call = nil
    }

    private func end(_ outcome: Outcome) {
        ended?(outcome)
        ended = nil
    }

    private func synthesized(_ event: SynthesisEvent) {
        guard !cancelled else { return }
        if case .finished = event { call = nil }
        if case .failed = event { call = nil }
        // Until what was held is handed over, later events queue behind it.
        if let taker, held.isEmpty { taker(event) } else { held.append(event) }
    }
}
