import Models

/// `semantic_vad`'s rule for when a turn ends, as a value: the VAD's short silences, the end-of-turn
/// model's verdicts and the audio's clock in; what to do out. No sockets, no clock of its own
/// (times are the session's audio milliseconds), so every path is a unit test.
///
/// When the VAD hears `probeMs` of silence after speech, the model is asked whether the turn is
/// complete (Pipecat's Smart Turn default: a 0.2 s VAD stop, then the model):
/// - complete (a probability of at least `completeAt`): the turn ends at once (`.model`);
/// - incomplete: it waits, up to `maxWaitMs` after the speech ended, then ends anyway
///   (`.maxWait`); the eagerness sets the wait, low the longest;
/// - the model failed or is not there: the silence rule the eagerness had before there was a
///   model serves (`.silence` after `silenceMs`);
/// - the user speaks again before any of these: the turn goes on, and the question is withdrawn.
public struct TurnEnding: Sendable, Equatable {
    public enum Cause: String, Sendable, CaseIterable {
        /// The model said the turn was complete.
        case model
        /// The model said incomplete, and the user said nothing more for the eagerness's longest wait.
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
        /// After an incomplete verdict, how long the turn may stay open without speech.
        public var maxWaitMs: Int
        /// Without a verdict, the silence that ends a turn.
        public var silenceMs: Int
        /// The probability of completeness that ends the turn (the eagerness's).
        public var completeAt: Double

        public init(maxWaitMs: Int, silenceMs: Int, completeAt: Double = 0.5) {
            self.maxWaitMs = maxWaitMs
            self.silenceMs = silenceMs
            self.completeAt = completeAt
        }
    }

    private enum State: Sendable, Equatable {
        case listening
        case asking
        case holding
        case bySilence
    }

    public let settings: Settings
    private var state = State.listening
    /// Where the speech before the silence ended, in session milliseconds.
    public private(set) var speechEndMs = 0

    public init(settings: Settings) {
        self.settings = settings
    }

    /// A question is out, or a verdict is holding the turn open: the turn has gone quiet.
    public var isPending: Bool { state != .listening }
    public var isAsking: Bool { state == .asking }

    /// The VAD heard `probeMs` of silence after speech that ended at `endMs`: ask the model.
    public mutating func silenceHeard(speechEndMs endMs: Int) -> Decision {
        speechEndMs = endMs
        state = .asking
        return .ask
    }

    /// The user spoke again: the turn goes on.
    public mutating func speechResumed() -> Decision? {
        let wasAsking = state == .asking
        state = .listening
        return wasAsking ? .withdraw : nil
    }

    public mutating func verdict(_ verdict: TurnVerdict) -> Decision? {
        guard state == .asking else { return nil }
        if verdict.probability >= settings.completeAt {
            state = .listening
            return .end(.model)
        }
        state = .holding
        return nil
    }

    /// The model could not answer: the silence rule decides this turn's end.
    public mutating func modelFailed() {
        if state == .asking { state = .bySilence }
    }

    /// The session's audio has reached `nowMs`.
    public mutating func audio(atMs nowMs: Int) -> Decision? {
        let quietMs = nowMs - speechEndMs
        switch state {
        case .listening:
            return nil
        case .asking, .holding:
            // A model that never answers holds the turn no longer than an incomplete verdict does.
            guard quietMs >= settings.maxWaitMs else { return nil }
            state = .listening
            return .end(.maxWait)
        case .bySilence:
            guard quietMs >= settings.silenceMs else { return nil }
            state = .listening
            return .end(.silence)
        }
    }

    /// The client's audio stopped (no frame for about 2 s, `SessionInput.audioStopped`): no more
    /// audio will say the user went on, and the audio clock the waits run on has stopped, so a
    /// pending turn ends now (a clip streamed by an SDK, then nothing, would otherwise stay open).
    public mutating func audioStopped() -> Decision? {
        switch state {
        case .listening: return nil
        case .asking, .holding:
            state = .listening
            return .end(.maxWait)
        case .bySilence:
            state = .listening
            return .end(.silence)
        }
    }

    /// The turn was committed or cleared by other means: nothing is pending.
    public mutating func reset() {
        state = .listening
    }
}
