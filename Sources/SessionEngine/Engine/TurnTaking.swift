import Models
import SpeechContracts

/// Who has the floor, as one value: the turn the detector has heard start and not yet end, the
/// end-of-turn model's question about it (`TurnEnding`), and a spoken reply it has paused
/// (`ReplyInterruption`). VAD events, the recogniser's words for a paused reply, the model's
/// verdicts and the audio clock go in; what to do comes out (announce the turn, pause the reply,
/// resume it, barge in, ask the model or stop asking, end the turn). No sockets, no clock of its
/// own (times are the session's audio milliseconds), no model: every decision is a unit test
/// (`TurnTakingTests`).
///
/// `SessionEngine` holds the one copy and carries the decisions out: the events, the commit, the
/// responses and the recogniser are its. The rules themselves stay in the two machines this one
/// composes; what is here is how they meet: a pause and a pending end never overlap, a verdict
/// counts only for the turn it was asked about, and a turn that goes on withdraws the question.
public struct TurnTaking: Sendable, Equatable {
    /// A turn the detector has heard start and not yet end.
    public struct Turn: Sendable, Equatable {
        public let itemID: String
        /// Where the speech itself began (without the padding), in session milliseconds.
        public let onsetMs: Int
        /// `speech_started`'s `audio_start_ms`.
        public let audioStartMs: Int

        public init(itemID: String, onsetMs: Int, audioStartMs: Int) {
            self.itemID = itemID
            self.onsetMs = onsetMs
            self.audioStartMs = audioStartMs
        }
    }

    /// A turn that ended: where its speech stopped, and why it was over.
    public struct Ended: Sendable, Equatable {
        public let turn: Turn
        public let atMs: Int
        public let cause: TurnEnding.Cause
    }

    /// A turn the client is now told of (`speech_started`), after its speech had paused a reply:
    /// with the words the recogniser heard meanwhile, which were held back until now.
    public struct Announced: Sendable, Equatable {
        public let turn: Turn
        public let heldWords: String?
    }

    /// What the engine does about the end of the turn.
    public enum Step: Sendable, Equatable {
        /// Ask the end-of-turn model about the turn's audio so far.
        case ask(itemID: String)
        /// The question about this turn is no longer wanted.
        case withdraw(itemID: String)
        /// The turn is over.
        case end(Ended)
    }

    /// What a speech start is.
    public enum Start: Sendable, Equatable {
        /// The user went on after a silence the model was weighing: the same turn continues
        /// (and the question, if one is out, is withdrawn).
        case continued(withdraw: Step?)
        /// A new turn; what it does to the reply in progress, if anything.
        case began(Turn, ReplyInterruption.Decision?)
        /// The user spoke again soon after their turn ended, before its reply was heard: the
        /// reply is withdrawn and the turn goes on, as a new item (`turn`, with the ended turn's
        /// start) that holds both halves; `withdrawn` is the ended turn's item.
        case reopened(Turn, withdrawn: String)
    }

    /// What a speech stop is.
    public enum Stop: Sendable, Equatable {
        /// The speech that paused the reply ended unconfirmed: the reply resumes and the speech
        /// leaves nothing behind.
        case resume(Turn, ReplyInterruption.Resumption)
        case step(Step)
    }

    /// What the recogniser's words for the current speech are.
    public enum Words: Sendable, Equatable {
        /// The speech is a turn the client knows of: the words are the client's too.
        case delivered
        /// The speech has paused a reply: the words are held, unsent.
        case held
        /// The words make the paused speech a barge-in.
        case bargeIn
        /// The paused speech had ended and its words, now in, are no barge-in: the reply resumes
        /// and the speech leaves nothing behind.
        case resume(Turn, ReplyInterruption.Resumption)
    }

    /// The turn that ended last, while it may reopen (`speechStarted`).
    public private(set) var lastEnded: Ended?
    /// How soon after a turn ended speech may reopen it: a pause a speaker takes mid-thought and
    /// the turn-taking targets count (up to 1 s), past the 1.2 s finished words wait, with room.
    public static let reopenWithinMs = 2_500

    public private(set) var turn: Turn? {
        // Words kept for a silence belong to the turn they were heard in.
        didSet { if turn != oldValue { earlyWords = nil } }
    }
    private var ending: TurnEnding?
    private var pause: ReplyInterruption?
    private var pausedWords: String?
    /// Where the paused speech ended, while its words are awaited (`pauseWordsWaitMs`): a short
    /// "stop" ends before any decode of it is back, and is a barge-in all the same.
    private var pauseEndedMs: Int?
    /// The words held are a whole decode up to a quiet (reset with them).
    private var pausedWordsSettled = false
    /// Where the paused speech's duration is measured from: its onset, or the onset of speech that
    /// went on while its words were awaited. Two "mm hmm"s a second apart are one speech to the
    /// words (backchannels both) but not 1.5 s of talking: measured from the first onset, the
    /// duration rule cut 6 replies in 111 pauses over ten minutes of looped backchannels
    /// (`make bench-noise`).
    private var pauseOnsetMs: Int?
    /// How long an ended paused speech waits for its words before the reply resumes without them.
    /// The words decide as soon as they come (one decode, about 350 ms on an idle box); this bounds
    /// the wait when the recogniser is busy. 600 ms missed 5 of 20 barge-ins at 10 talkers
    /// (`parley-load talkers`, ten barge-ins at once: their decodes queue behind one another);
    /// a backchannel then holds the reply a little longer, a barge-in is not lost.
    public static let pauseWordsWaitMs = 1_500
    /// Words for a silence the detector has not yet stopped on (see `wordsHeard`).
    private struct EarlyWords: Sendable, Equatable {
        package let text: String
        package let speechEndMs: Int
    }

    private var earlyWords: EarlyWords?
    /// The session's language when the current speech began (ISO-639-1; nil: English): its words
    /// are judged in it (`TurnWords.judge`, `TurnLexicon`).
    private var language: String?

    public init() {}

    /// No turn in progress (the detector's state is then worth nothing).
    public var isIdle: Bool { turn == nil }
    /// User speech has paused a spoken reply and is not yet known to be a barge-in.
    public var isPaused: Bool { pause != nil }
    /// The turn has gone quiet and the model's verdict, or its wait, holds it open.
    public var isEndPending: Bool { ending?.isPending == true }
    /// Where the speech before the pending silence ended.
    public var pendingSpeechEndMs: Int? { ending?.speechEndMs }

    // MARK: Speech

    /// The detector heard speech start. `turn` is the one it begins if it is not the current one
    /// going on; `reply` is what is being answered meanwhile.
    /// `replyUnheard`: the reply being made answers the turn that ended last, and nothing of it
    /// has reached the listener yet.
    public mutating func speechStarted(_ new: Turn, during reply: ReplyInterruption.Reply, interruptResponse: Bool,
                                       settings: ReplyInterruption.Settings, expectsWords: Bool, settledWords: SettledWords = .decode,
                                       narrowband: Bool = false, replyUnheard: Bool = false, language: String? = nil) -> Start {
        self.language = language
        if turn != nil, var pending = ending, pending.isPending {
            let decision = pending.speechResumed()
            ending = pending
            return .continued(withdraw: decision == .withdraw ? turn.map { .withdraw(itemID: $0.itemID) } : nil)
        }
        // The paused speech goes on while its words were awaited: the same speech.
        if turn != nil, pause != nil, pauseEndedMs != nil {
            pauseEndedMs = nil
            pauseOnsetMs = new.onsetMs
            return .continued(withdraw: nil)
        }
        let last = lastEnded
        lastEnded = nil
        if replyUnheard, let last, new.audioStartMs - last.atMs <= Self.reopenWithinMs {
            let reopened = Turn(itemID: new.itemID, onsetMs: last.turn.onsetMs, audioStartMs: last.turn.audioStartMs)
            turn = reopened
            return .reopened(reopened, withdrawn: last.turn.itemID)
        }
        turn = new
        let (machine, decision) = ReplyInterruption.speechStarted(during: reply, interruptResponse: interruptResponse,
                                                                  settings: settings, expectsWords: expectsWords, settledWords: settledWords,
                                                                  narrowband: narrowband, language: language)
        if decision == .pause {
            releasePauseState()
            pause = machine
            pauseOnsetMs = new.onsetMs
        }
        return .began(new, decision)
    }

    /// The detector heard the speech stop at `atMs`. `semantic`: the end-of-turn model's rule, when
    /// there is a model to ask and the session wants it; nil: silence ends the turn.
    public mutating func speechStopped(atMs ms: Int, semantic: TurnEnding.Settings?) -> Stop? {
        guard let current = turn else { return nil }
        if let machine = pause {
            // Its words may yet make it a barge-in: the reply stays paused until they come.
            if machine.awaitsSettledWords, !pausedWordsSettled {
                pauseEndedMs = ms
                return nil
            }
            return resumeFromPause(current, machine)
        }
        guard let semantic else { return .step(.end(end(current, atMs: ms, .silence))) }
        var pending = ending ?? TurnEnding(settings: semantic)
        _ = pending.silenceHeard(speechEndMs: ms)
        if let early = earlyWords, early.speechEndMs == ms { _ = pending.wordsHeard(early.text, language: language, speechEndMs: ms, atMs: ms) }
        earlyWords = nil
        ending = pending
        return .step(.ask(itemID: current.itemID))
    }

    /// The speech that paused the reply has lasted to `lastSpeechEndMs` (its last loud frame):
    /// whether that makes it a barge-in.
    public func lastsLongEnough(lastSpeechEndMs: Int) -> Bool {
        guard let pause, let turn else { return false }
        return pause.heard(speechMs: lastSpeechEndMs - (pauseOnsetMs ?? turn.onsetMs)) == .bargeIn
    }

    /// The recogniser's hypothesis of the current speech so far; `settled`: all of it, up to a
    /// quiet after it (`TranscriptionEvent.settled`).
    public mutating func recognised(_ text: String, confidence: DecodeConfidence? = nil, settled: Bool = false) -> Words {
        guard var machine = pause else { return .delivered }
        pausedWords = text
        // A partial made after the settled words (of the quiet after them) does not unsettle them;
        // only more speech does (`spokeAgain`).
        if settled { pausedWordsSettled = true }
        let decision = machine.recognised(text, confidence: confidence)
        pause = machine
        if decision == .bargeIn { return .bargeIn }
        if settled, pauseEndedMs != nil, let current = turn, case .resume(let turn, let why) = resumeFromPause(current, machine) {
            return .resume(turn, why)
        }
        return .held
    }

    /// The paused speech went on after the quiet its settled words were of: they no longer cover it.
    public mutating func spokeAgain() {
        pausedWordsSettled = false
    }

    /// The client's audio stopped while the ended speech's words were awaited: the audio clock that
    /// `pauseDue` runs on has stopped, and no more speech will come, so the reply resumes now (it
    /// stayed paused for good when a client stopped streaming within 1.5 s of a hum's end).
    public mutating func pauseAudioStopped() -> Stop? {
        guard let machine = pause, pauseEndedMs != nil, let current = turn else { return nil }
        return resumeFromPause(current, machine)
    }

    /// The paused speech ended `pauseWordsWaitMs` ago and no words came to decide it: the reply
    /// resumes, at the audio's `nowMs`.
    public mutating func pauseDue(atMs nowMs: Int) -> Stop? {
        guard let machine = pause, let ended = pauseEndedMs, let current = turn, nowMs - ended >= Self.pauseWordsWaitMs else { return nil }
        return resumeFromPause(current, machine)
    }

    private mutating func resumeFromPause(_ current: Turn, _ machine: ReplyInterruption) -> Stop? {
        guard case .resume(let why) = machine.speechStopped() else { return nil }
        releasePauseState()
        turn = nil
        return .resume(current, why)
    }

    private mutating func releasePauseState() {
        pause = nil
        pausedWords = nil
        pausedWordsSettled = false
        pauseEndedMs = nil
        pauseOnsetMs = nil
    }

    /// The paused speech is a turn after all (a barge-in, or the reply it paused ended): the
    /// client is told of it now, with its held words.
    public mutating func confirm() -> Announced? {
        guard pause != nil, let turn else { return nil }
        let words = pausedWords
        releasePauseState()
        return Announced(turn: turn, heldWords: words)
    }

    /// A pause that no longer stands (the audio was cleared, turn detection went, the rate
    /// changed) without being a turn: true if there was one, to resume its reply.
    public mutating func releasePause() -> Bool {
        guard pause != nil else { return false }
        releasePauseState()
        return true
    }

    // MARK: The end of the turn

    /// The session's audio has reached `nowMs`: a pending end may be due.
    public mutating func audio(atMs nowMs: Int) -> Step? {
        guard var pending = ending else { return nil }
        let decision = pending.audio(atMs: nowMs)
        ending = pending
        guard let decision else { return nil }
        return step(decision)
    }

    /// The client's audio stopped: a pending end is due now.
    public mutating func audioStopped() -> Step? {
        guard var pending = ending else { return nil }
        let decision = pending.audioStopped()
        ending = pending
        guard let decision else { return nil }
        return step(decision)
    }

    /// The model's answer about the turn `itemID`, with the audio at `nowMs`. A late one (for a
    /// turn that went on, ended, or was never asked about) changes nothing.
    public mutating func verdict(_ itemID: String, _ result: Result<TurnVerdict, ModelError>, nowMs: Int) -> Step? {
        guard turn?.itemID == itemID, var pending = ending, pending.isAsking else { return nil }
        let decision = switch result {
        case .success(let verdict): pending.verdict(verdict, atMs: nowMs)
        case .failure: pending.modelFailed(atMs: nowMs)
        }
        ending = pending
        return decision.flatMap { step($0) }
    }

    /// The recogniser's words for the turn `itemID` up to the speech that ended at `speechEndMs`
    /// (decoded as it went quiet): the text signal of the turn's end. Words of a turn that has
    /// gone on, or that is not weighed by a model, change nothing.
    public mutating func wordsHeard(_ itemID: String, _ text: String, speechEndMs: Int, nowMs: Int) -> Step? {
        guard turn?.itemID == itemID, pause == nil else { return nil }
        guard var pending = ending else {
            // Decoded before the detector's stop (the recogniser starts at a shorter quiet): kept
            // for the silence the stop will begin.
            earlyWords = EarlyWords(text: text, speechEndMs: speechEndMs)
            return nil
        }
        let decision = pending.wordsHeard(text, language: language, speechEndMs: speechEndMs, atMs: nowMs)
        ending = pending
        return decision.flatMap { step($0) }
    }

    /// The session left `semantic_vad` while the model weighed the turn's end: plain silence rules
    /// now, and the turn has been quiet long enough to have stopped the detector, so it ends
    /// (after the question, if one is out, is withdrawn).
    public mutating func semanticEnded() -> (withdraw: Step?, ended: Ended)? {
        guard let pending = ending, let current = turn else { return nil }
        let withdraw = forgetEnding()
        return (withdraw, end(current, atMs: pending.speechEndMs, .silence))
    }

    // MARK: Turns taken away

    /// The turn is committed by hand (`input_audio_buffer.commit`): it is handed over whole, and
    /// any question about its end withdrawn.
    public mutating func take() -> (turn: Turn, withdraw: Step?)? {
        lastEnded = nil
        guard let current = turn else { return nil }
        let withdraw = forgetEnding()
        turn = nil
        return (current, withdraw)
    }

    /// The turn is dropped (its audio cleared, the rate or turn detection changed): what there
    /// was, the question to withdraw, and whether a paused reply must resume.
    public mutating func drop() -> (dropped: Bool, withdraw: Step?, resumes: Bool) {
        let withdraw = forgetEnding()
        let dropped = turn != nil
        turn = nil
        lastEnded = nil
        return (dropped, withdraw, releasePause())
    }

    /// Whatever was asked about the turn's end is no longer wanted.
    public mutating func forgetEnding() -> Step? {
        guard let pending = ending else { return nil }
        ending = nil
        guard pending.isAsking, let turn else { return nil }
        return .withdraw(itemID: turn.itemID)
    }

    private mutating func step(_ decision: TurnEnding.Decision) -> Step? {
        guard let turn else { return nil }
        switch decision {
        case .ask: return .ask(itemID: turn.itemID)
        case .withdraw: return .withdraw(itemID: turn.itemID)
        case .end(let cause): return .end(end(turn, atMs: ending?.speechEndMs ?? 0, cause))
        }
    }

    private mutating func end(_ ended: Turn, atMs ms: Int, _ cause: TurnEnding.Cause) -> Ended {
        turn = nil
        ending = nil
        let done = Ended(turn: ended, atMs: ms, cause: cause)
        lastEnded = done
        return done
    }
}
