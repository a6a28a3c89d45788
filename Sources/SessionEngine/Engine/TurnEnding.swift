import Models
import SpeechContracts

/// `semantic_vad`'s rule for when a turn ends, as a value: the VAD's short silences, the end-of-turn
/// model's verdicts, what the words so far say (`TurnWords`) and the audio's clock in; what to do
/// out. No sockets, no clock of its own (times are the session's audio milliseconds), so every
/// path is a unit test.
///
/// When the VAD hears `probeMs` of silence after speech, the model is asked whether the turn is
/// complete (Pipecat's Smart Turn default: a 0.2 s VAD stop, then the model), and the recogniser
/// decodes the turn up to that silence (the words). The two are weighed together:
///
/// | audio model \ words | finished         | asked (a question) | spelling out      | unfinished | not yet (expected) |
/// |---------------------|------------------|--------------------|-------------------|------------|--------------------|
/// | complete            | `agreedWaitMs`   | `agreedWaitMs`     | `spellingOutWaitMs` | `maxWaitMs` | `wordsWaitMs`    |
/// | incomplete          | `finishedWaitMs` | `askedWaitMs`      | `spellingOutWaitMs` | `maxWaitMs` | `maxWaitMs`      |
/// | not answered yet    | `finishedWaitMs` | `askedWaitMs`      | `spellingOutWaitMs` | `maxWaitMs` | `maxWaitMs`      |
/// | failed, or none     | `silenceMs`      | `silenceMs`        | `spellingOutWaitMs` | `maxWaitMs` | `silenceMs`      |
///
/// (each a wait of silence after the speech ended, `agreedWaitMs` the shortest; on a noisy input,
/// `Settings.noisyInput`, `agreedWaitMs` and `askedWaitMs` wait `finishedWaitMs` too). So audio
/// and words that agree end a turn soonest; words that say "not over" ("I need a flight to") hold
/// it however sure the audio model is; finished words end it past a mid-thought pause even when
/// the audio model never says so, instead of after the eagerness's longest wait. The user speaking again before any of these
/// withdraws the question, and the turn goes on.
public struct TurnEnding: Sendable, Equatable {
    public enum Cause: String, Sendable, CaseIterable {
        /// The model said the turn was complete (and the words, when read, agreed).
        case model
        /// The words said finished (or digits being read out) and the silence went past a pause.
        case words
        /// Nothing said finished, and the user said nothing more for the eagerness's longest wait.
        case maxWait = "max_wait"
        /// Silence alone: server_vad, or semantic_vad without a model.
        case silence
    }

    public enum Decision: Sendable, Equatable {
        /// Ask the model about the turn's audio so far.
        case ask
        /// The turn ended where its speech did (`speechEndMs`), for this reason.
        case end(Cause)
        /// The question asked is no longer wanted (the user went on).
        case withdraw
    }

    /// The silence after which the model is asked: Pipecat's VAD stop with Smart Turn (0.2 s),
    /// short enough that a complete turn ends within about 300 ms of its last word.
    public static let probeMs = 200
    /// The audio the model is sent: Smart Turn reads the last 8 s of a turn, as the speech
    /// helper's contract says (one number for both sides of the helper's socket).
    public static let maxSeconds = SpeechHelperContract.turnSeconds

    public struct Settings: Sendable, Equatable {
        /// When nothing says the turn is finished, how long it may stay open without speech.
        public var maxWaitMs: Int
        /// Without a verdict, the silence that ends a turn.
        public var silenceMs: Int
        /// The probability of completeness that ends the turn (the eagerness's).
        public var completeAt: Double
        /// Finished words that the audio model does not confirm: past a mid-thought pause (the
        /// turn-taking targets count pauses up to 1 s) the turn ends on the words.
        public var finishedWaitMs = 1_200
        /// Finished words heard as a question (`TurnWords.Judgement.asked`) that the audio model
        /// does not confirm. Shorter than `finishedWaitMs`: Smart Turn scores many finished
        /// questions in synthetic voices under its cut ("could you please tell me what twelve
        /// times seven is?" 0.01 to 0.45 in eight voices of nine), while the pauses of the
        /// scenario set that Whisper wrote as a question are held by the words' own rules ("can
        /// you tell me?", in nine voices of nine); docs/benchmarks.md, "Parley's operating point".
        public var askedWaitMs = 600
        /// Digits being read out: groups are paused between, so the turn waits past such a pause.
        public var spellingOutWaitMs = 1_500
        /// A complete verdict before the words: how long they are waited for, at most. Past the
        /// 1 s pauses the targets count, so that words slower than the verdict (a busy helper, a
        /// slow CPU) never let a pause after "I need a flight to" end the turn. They come about
        /// 250 ms after the last word on an idle machine, so a finished turn seldom waits this
        /// out; and where they are slow, waiting for them costs the reply nothing, since it needs
        /// the turn's text before it can begin. 2.5 s, not 1 s: on an AMD EPYC without AVX-512
        /// (2026-11-26) Whisper's decode at the quiet took 1.2-1.3 s of CPU (313 ms where
        /// docs/benchmarks.md measured it), longer than the 1 s pause. (The flight case that
        /// failed there was another thing: Whisper hears its final "to" as "too"; see
        /// TurnWordsEndToEndTests.)
        public var wordsWaitMs = 2_500
        /// Whether words come (a recogniser that decodes the turn when it goes quiet): without
        /// them the audio model's verdict decides alone.
        public var readsWords = false
        /// The input is noisy (a line whose floor stayed loud): the audio model and the words
        /// agreeing no longer end the turn at once, only past `finishedWaitMs`. On a G.711 line
        /// with pink noise 10 dB under the speech, denoised, Smart Turn and Whisper's words
        /// agreed in 13 of 30 pauses of 1 s, each answered (`parley-load turn-taking --line
        /// g711-noisy`, docs/benchmarks.md "Turns over phone lines"; 1 of 30 on a clean line).
        public var noisyInput = false

        /// The silence after which the audio model and the words agreeing end the turn (the
        /// table above): 0 ends it as they agree. A server's eagerness sets more (auto 500 ms): a
        /// clause's comma is a pause of 300 to 460 ms in Piper's voice (below -40 dBFS), heard as
        /// 450 to 650 ms of silence once the VAD's onset is counted, and "Thank you very much,"
        /// reads as finished to both; at ten talkers such pauses ended 4 turns of 150 when the
        /// words came sooner (docs/benchmarks.md, "Talkers", 2026-11-28).
        public var agreedWaitMs = 0

        /// The silence after which the audio model's "complete" ends the turn with words that agree.
        var agreedEndMs: Int { noisyInput ? finishedWaitMs : agreedWaitMs }
        /// The same by itself, where no words come (a recogniser that does not decode whole
        /// turns): at once, as before the words were read.
        var completeWaitMs: Int { noisyInput ? finishedWaitMs : 0 }
        /// The silence after which a question the audio model does not confirm ends the turn: on a
        /// noisy input the recogniser's question mark is no surer than its other words.
        var questionWaitMs: Int { noisyInput ? finishedWaitMs : max(agreedWaitMs, min(askedWaitMs, finishedWaitMs)) }

        public init(maxWaitMs: Int, silenceMs: Int, completeAt: Double = 0.5, readsWords: Bool = false) {
            self.maxWaitMs = maxWaitMs
            self.silenceMs = silenceMs
            self.completeAt = completeAt
            self.readsWords = readsWords
        }
    }

    /// A server's own operating point for `semantic_vad` at eagerness `auto`: the probability that
    /// ends a turn, and the waits of finished words and of questions the model does not confirm;
    /// nil keeps auto's.
    /// Held compactly (a session carries it: 6 bytes), as per mille and milliseconds.
    public struct Tuning: Sendable, Equatable {
        private var completeAtPerMille: UInt16 = 0
        private var finishedWait: UInt16 = 0
        private var askedWait: UInt16 = 0

        public init(completeAt: Double? = nil, finishedWaitMs: Int? = nil, askedWaitMs: Int? = nil) {
            if let completeAt { completeAtPerMille = UInt16(clamping: max(1, Int((completeAt * 1000).rounded()))) }
            if let finishedWaitMs { finishedWait = UInt16(clamping: max(1, finishedWaitMs)) }
            if let askedWaitMs { askedWait = UInt16(clamping: max(1, askedWaitMs)) }
        }

        public var completeAt: Double? { completeAtPerMille == 0 ? nil : Double(completeAtPerMille) / 1000 }
        public var finishedWaitMs: Int? { finishedWait == 0 ? nil : Int(finishedWait) }
        public var askedWaitMs: Int? { askedWait == 0 ? nil : Int(askedWait) }

        package static let finishedWaitRange = 100...10_000
    }

    /// The audio model's answer about the pending silence.
    private enum Verdict: Sendable, Equatable {
        case awaited, complete, incomplete, failed
    }

    public let settings: Settings
    /// nil: listening (no silence pending).
    private var verdict: Verdict?
    /// What the words up to a silence said, and where that silence's speech ended.
    private struct Words: Sendable, Equatable {
        package let judgement: TurnWords.Judgement
        package let speechEndMs: Int
    }

    private var words: Words?
    /// Where the speech before the silence ended, in session milliseconds.
    public private(set) var speechEndMs = 0

    public init(settings: Settings) {
        self.settings = settings
    }

    /// A question is out, or a verdict or the words are holding the turn open: the turn has gone quiet.
    public var isPending: Bool { verdict != nil }
    public var isAsking: Bool { verdict == .awaited }

    /// The VAD heard `probeMs` of silence after speech that ended at `endMs`: ask the model.
    public mutating func silenceHeard(speechEndMs endMs: Int) -> Decision {
        speechEndMs = endMs
        verdict = .awaited
        // Words decoded for an earlier silence are not this one's.
        if let words, words.speechEndMs != endMs { self.words = nil }
        return .ask
    }

    /// The user spoke again: the turn goes on.
    public mutating func speechResumed() -> Decision? {
        let wasAsking = verdict == .awaited
        verdict = nil
        words = nil
        return wasAsking ? .withdraw : nil
    }

    /// The model's verdict on the pending silence, the audio at `nowMs`.
    public mutating func verdict(_ answer: TurnVerdict, atMs nowMs: Int) -> Decision? {
        guard verdict == .awaited else { return nil }
        verdict = answer.probability >= settings.completeAt ? .complete : .incomplete
        return audio(atMs: nowMs)
    }

    /// The model could not answer: the silence rule decides this turn's end.
    public mutating func modelFailed(atMs nowMs: Int) -> Decision? {
        guard verdict == .awaited else { return nil }
        verdict = .failed
        return audio(atMs: nowMs)
    }

    /// The recogniser's words for the speech that ended at `endMs` (decoded when it went quiet,
    /// which may be a little before the VAD's stop, or after it).
    public mutating func wordsHeard(_ text: String, language: String? = nil, speechEndMs endMs: Int, atMs nowMs: Int) -> Decision? {
        guard let judgement = TurnWords.judge(text, language: language) else { return nil }
        words = Words(judgement: judgement, speechEndMs: endMs)
        guard verdict != nil, endMs == speechEndMs else { return nil }
        return audio(atMs: nowMs)
    }

    /// How long the silence must last for the turn to end, and why it would, as the table above says.
    private var rule: (waitMs: Int, cause: Cause)? {
        guard let verdict else { return nil }
        let heard = words.flatMap { $0.speechEndMs == speechEndMs ? $0.judgement : nil }
        switch heard {
        case .unfinished?: return (settings.maxWaitMs, .maxWait)
        case .spellingOut?: return (settings.spellingOutWaitMs, .words)
        case .finished?, .asked?:
            switch verdict {
            case .complete: return (settings.agreedEndMs, .model)
            case .failed: return (settings.silenceMs, .silence)
            case .awaited, .incomplete: return (heard == .asked ? settings.questionWaitMs : settings.finishedWaitMs, .words)
            }
        case nil:
            switch verdict {
            case .complete: return (settings.readsWords ? settings.wordsWaitMs : settings.completeWaitMs, .model)
            case .failed: return (settings.silenceMs, .silence)
            // A model that never answers holds the turn no longer than an incomplete verdict does.
            case .awaited, .incomplete: return (settings.maxWaitMs, .maxWait)
            }
        }
    }

    /// The session's audio has reached `nowMs`.
    public mutating func audio(atMs nowMs: Int) -> Decision? {
        guard let rule, nowMs - speechEndMs >= rule.waitMs else { return nil }
        verdict = nil
        words = nil
        return .end(rule.cause)
    }

    /// The client's audio stopped (no frame for about 2 s, `SessionInput.audioStopped`): no more
    /// audio will say the user went on, and the audio clock the waits run on has stopped, so a
    /// pending turn ends now (a clip streamed by an SDK, then nothing, would otherwise stay open).
    public mutating func audioStopped() -> Decision? {
        guard let rule else { return nil }
        verdict = nil
        words = nil
        return .end(rule.cause)
    }

    /// The turn was committed or cleared by other means: nothing is pending.
    public mutating func reset() {
        verdict = nil
        words = nil
    }
}
