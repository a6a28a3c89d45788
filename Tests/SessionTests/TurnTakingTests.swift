import Models
import Testing
@testable import Session
import SpeechContracts
@testable import SessionEngine

/// Every decision `TurnTaking` makes, from scripted VAD events, words and verdicts: no model, no
/// socket, no clock (times are audio milliseconds).
@Suite struct TurnTakingTests {
    static let semantic = TurnEnding.Settings(maxWaitMs: 2_000, silenceMs: 800)
    static let interruption = ReplyInterruption.Settings(minDurationMs: 500, minWords: 1)

    static func turn(_ n: Int = 1, onsetMs: Int = 1_000) -> TurnTaking.Turn {
        TurnTaking.Turn(itemID: "item_\(n)", onsetMs: onsetMs, audioStartMs: onsetMs - 300)
    }

    /// A floor on which `turn` began during `reply`.
    static func started(_ turn: TurnTaking.Turn = turn(), during reply: ReplyInterruption.Reply = .none,
                        expectsWords: Bool = false, settledWords: SettledWords = .decode) -> (TurnTaking, TurnTaking.Start) {
        var floor = TurnTaking()
        let start = floor.speechStarted(turn, during: reply, interruptResponse: true, settings: interruption, expectsWords: expectsWords,
                                        settledWords: settledWords)
        return (floor, start)
    }

    /// A turn gone quiet at 2,000 ms under `semantic_vad`, its end asked about.
    static func asking() -> TurnTaking {
        var (floor, _) = started()
        let r1 = floor.speechStopped(atMs: 2_000, semantic: semantic)
        #expect(r1 == .step(.ask(itemID: "item_1")))
        return floor
    }

    // MARK: Speech starts

    @Test func speechWithNothingToAnswerBeginsATurn() {
        let (floor, start) = Self.started()
        #expect(start == .began(Self.turn(), nil))
        #expect(floor.turn == Self.turn() && !floor.isIdle && !floor.isPaused)
    }

    @Test func speechDuringATextReplyBargesInAtOnce() {
        let (floor, start) = Self.started(during: .text)
        #expect(start == .began(Self.turn(), .bargeIn))
        #expect(!floor.isPaused)
    }

    @Test func speechDuringASpokenReplyPausesIt() {
        let (floor, start) = Self.started(during: .spoken)
        #expect(start == .began(Self.turn(), .pause))
        #expect(floor.isPaused)
    }

    @Test func aReplyThatMayNotBeInterruptedIsNeitherPausedNorCut() {
        var floor = TurnTaking()
        let start = floor.speechStarted(Self.turn(), during: .spoken, interruptResponse: false, settings: Self.interruption, expectsWords: true)
        #expect(start == .began(Self.turn(), nil))
        #expect(!floor.isPaused)
    }

    // MARK: A paused reply

    @Test func aShortSoundResumesThePausedReplyAndLeavesNoTurn() {
        var (floor, _) = Self.started(during: .spoken)
        let r2 = floor.speechStopped(atMs: 1_300, semantic: nil)
        #expect(r2 == .resume(Self.turn(), .short))
        #expect(floor.isIdle && !floor.isPaused)
    }

    @Test func backchannelWordsAreHeldAndTheReplyResumesForThem() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true)
        let r3 = floor.recognised("mm hmm")
        #expect(r3 == .held)
        #expect(!floor.lastsLongEnough(lastSpeechEndMs: 1_900), "a long mm-hmm is still a backchannel")
        // The speech ends before its settled words: the reply stays paused for them.
        let r4 = floor.speechStopped(atMs: 1_900, semantic: Self.semantic)
        #expect(r4 == nil && floor.isPaused)
        let r5 = floor.recognised("Mm-hmm.", settled: true)
        #expect(r5 == .resume(Self.turn(), .backchannel))
        #expect(floor.isIdle)
    }

    @Test func aShortStopEndsBeforeItsWordsAndStillBargesIn() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true)
        #expect(floor.speechStopped(atMs: 1_400, semantic: Self.semantic) == nil)
        #expect(floor.pauseDue(atMs: 1_800) == nil)
        #expect(floor.recognised("Stop.", settled: true) == .bargeIn)
    }

    @Test func wordsThatNeverComeResumeTheReplyAfterTheirWait() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true)
        _ = floor.speechStopped(atMs: 1_400, semantic: Self.semantic)
        #expect(floor.pauseDue(atMs: 1_400 + TurnTaking.pauseWordsWaitMs - 1) == nil)
        #expect(floor.pauseDue(atMs: 1_400 + TurnTaking.pauseWordsWaitMs) == .resume(Self.turn(), .short))
        #expect(floor.isIdle && !floor.isPaused)
    }

    /// Whisper's settled words come, then a partial of the quiet after them (a decode of the
    /// audio that came meanwhile): the words stay settled, and the speech's end resumes the reply.
    @Test func aPartialAfterTheSettledWordsDoesNotUnsettleThem() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true)
        let unsure = DecodeConfidence(averageLogProbability: -0.68, noSpeechProbability: 0.13)
        #expect(floor.recognised("And each end.", confidence: unsure, settled: true) == .held)
        #expect(floor.recognised("And each end.", confidence: unsure) == .held)
        #expect(floor.speechStopped(atMs: 1_900, semantic: nil) == .resume(Self.turn(), .short))
    }

    /// Speech that goes on after its settled words' quiet waits for the words of all of it.
    @Test func speakingAgainUnsettlesTheWords() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true)
        #expect(floor.recognised("mm", settled: true) == .held)
        floor.spokeAgain()
        #expect(floor.speechStopped(atMs: 1_900, semantic: nil) == nil && floor.isPaused)
        #expect(floor.recognised("Mm, hmm.", settled: true) == .resume(Self.turn(), .backchannel))
    }

    /// The client stops streaming while the ended speech's words are awaited: the audio clock the
    /// wait runs on stops with it, so the reply resumes now instead of staying paused for good.
    @Test func audioThatStopsWhileWordsAreAwaitedResumesTheReply() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true)
        #expect(floor.pauseAudioStopped() == nil, "the speech has not ended: nothing to resume yet")
        #expect(floor.speechStopped(atMs: 1_400, semantic: nil) == nil && floor.isPaused)
        #expect(floor.pauseAudioStopped() == .resume(Self.turn(), .short))
        #expect(floor.isIdle && !floor.isPaused)
    }

    /// pocketsphinx's partial of a short "stop" can come after the speech's end on a busy CPU
    /// (it did on a slow CI machine, and the reply resumed): the pause waits for its guess.
    @Test func aStreamingRecognisersLateGuessStillBargesIn() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true, settledWords: .hypothesis)
        #expect(floor.speechStopped(atMs: 1_400, semantic: nil) == nil && floor.isPaused)
        #expect(floor.recognised("i") == .bargeIn, "any word of a guess asks for the floor")
    }

    @Test func aStreamingRecognisersSettledSilenceResumesTheReplyAtOnce() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true, settledWords: .hypothesis)
        #expect(floor.speechStopped(atMs: 1_400, semantic: nil) == nil)
        #expect(floor.recognised("", settled: true) == .resume(Self.turn(), .short))
        #expect(floor.isIdle && !floor.isPaused)
    }

    @Test func aStreamingRecognisersBackchannelResumesTheReply() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true, settledWords: .hypothesis)
        #expect(floor.recognised("aha", settled: true) == .held)
        #expect(floor.speechStopped(atMs: 1_400, semantic: nil) == .resume(Self.turn(), .backchannel), "its words were in before it ended")
    }

    /// A recogniser that says nothing until the turn is over (an upload): no words are coming,
    /// so the short speech resumes the reply when it ends.
    @Test func aRecogniserWithoutSettledWordsResumesWhenTheSpeechEnds() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true, settledWords: .none)
        #expect(floor.speechStopped(atMs: 1_400, semantic: nil) == .resume(Self.turn(), .short))
    }

    @Test func speechAgainWhileItsWordsAreAwaitedIsTheSameSpeech() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true)
        _ = floor.speechStopped(atMs: 1_400, semantic: Self.semantic)
        let again = TurnTaking.Turn(itemID: "item_9", onsetMs: 1_700, audioStartMs: 1_400)
        #expect(floor.speechStarted(again, during: .spoken, interruptResponse: true, settings: .init(), expectsWords: true) == .continued(withdraw: nil))
        #expect(floor.turn == Self.turn() && floor.isPaused)
    }

    /// Two backchannels a second apart are one speech to the words, but the duration rule
    /// measures the second from its own onset: 1.2 s of it is no barge-in, though 2.6 s have
    /// passed since the first began; 1.5 s of it is one.
    @Test func speechAgainWhileItsWordsAreAwaitedIsTimedFromItsOwnOnset() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true)
        _ = floor.speechStopped(atMs: 1_400, semantic: Self.semantic)
        let again = TurnTaking.Turn(itemID: "item_9", onsetMs: 2_400, audioStartMs: 2_100)
        _ = floor.speechStarted(again, during: .spoken, interruptResponse: true, settings: .init(), expectsWords: true)
        #expect(!floor.lastsLongEnough(lastSpeechEndMs: 3_600))
        #expect(floor.lastsLongEnough(lastSpeechEndMs: 3_900))
    }

    @Test func aRealWordBargesInAndItsHeldWordsGoWithTheTurn() {
        var (floor, _) = Self.started(during: .spoken, expectsWords: true)
        let r5 = floor.recognised("wait")
        #expect(r5 == .bargeIn)
        let r6 = floor.confirm()
        #expect(r6 == TurnTaking.Announced(turn: Self.turn(), heldWords: "wait"))
        #expect(!floor.isPaused && floor.turn == Self.turn(), "the speech goes on as the user's turn")
        let r7 = floor.recognised("wait a moment")
        #expect(r7 == .delivered)
    }

    @Test func speechLongEnoughBargesInWithoutWords() {
        let floor = Self.started(during: .spoken).0
        let short = floor.lastsLongEnough(lastSpeechEndMs: 1_400), long = floor.lastsLongEnough(lastSpeechEndMs: 1_500)
        #expect(!short && long)
    }

    @Test func withARecogniserSpeechWaitsForItsWordsUpToThreeTimesTheDuration() {
        let floor = Self.started(during: .spoken, expectsWords: true).0
        let waiting = floor.lastsLongEnough(lastSpeechEndMs: 2_400), enough = floor.lastsLongEnough(lastSpeechEndMs: 2_500)
        #expect(!waiting && enough)
    }

    @Test func confirmingOrReleasingWithoutAPauseDoesNothing() {
        var (floor, _) = Self.started()
        let r8 = floor.confirm()
        #expect(r8 == nil)
        let released = floor.releasePause()
        #expect(!released)
        let r9 = floor.recognised("hello")
        #expect(r9 == .delivered)
    }

    @Test func aPauseReleasedWithoutATurnResumesTheReply() {
        var (floor, _) = Self.started(during: .spoken)
        let r10 = floor.releasePause()
        #expect(r10)
        #expect(!floor.isPaused && floor.turn == Self.turn())
    }

    // MARK: The end of the turn

    @Test func silenceEndsTheTurnWhereItsSpeechStopped() {
        var (floor, _) = Self.started()
        let stop = floor.speechStopped(atMs: 2_000, semantic: nil)
        #expect(stop == .step(.end(TurnTaking.Ended(turn: Self.turn(), atMs: 2_000, cause: .silence))))
        #expect(floor.isIdle)
        let r11 = floor.speechStopped(atMs: 2_100, semantic: nil)
        #expect(r11 == nil, "no turn, nothing to stop")
    }

    @Test func semanticVADAsksTheModelAndACompleteVerdictEndsTheTurn() {
        var floor = Self.asking()
        #expect(floor.isEndPending && floor.pendingSpeechEndMs == 2_000)
        let step = floor.verdict("item_1", .success(TurnVerdict(complete: true, probability: 0.9)), nowMs: 2_250)
        #expect(step == .end(TurnTaking.Ended(turn: Self.turn(), atMs: 2_000, cause: .model)))
        #expect(floor.isIdle && !floor.isEndPending)
    }

    @Test func anIncompleteVerdictHoldsTheTurnUntilTheLongestWait() {
        var floor = Self.asking()
        let r12 = floor.verdict("item_1", .success(TurnVerdict(complete: false, probability: 0.1)), nowMs: 2_250)
        #expect(r12 == nil)
        #expect(floor.isEndPending)
        let r13 = floor.audio(atMs: 3_990)
        #expect(r13 == nil)
        let r14 = floor.audio(atMs: 4_000)
        #expect(r14 == .end(TurnTaking.Ended(turn: Self.turn(), atMs: 2_000, cause: .maxWait)))
    }

    @Test func aFailedModelLeavesTheTurnToSilence() {
        var floor = Self.asking()
        let r15 = floor.verdict("item_1", .failure(ModelError(code: "unavailable", message: "down")), nowMs: 2_300)
        #expect(r15 == nil)
        let r16 = floor.audio(atMs: 2_799)
        #expect(r16 == nil)
        let r17 = floor.audio(atMs: 2_800)
        #expect(r17 == .end(TurnTaking.Ended(turn: Self.turn(), atMs: 2_000, cause: .silence)))
    }

    @Test func aFailureAfterTheSilenceAlreadyHeardEndsTheTurnAtOnce() {
        var floor = Self.asking()
        let step = floor.verdict("item_1", .failure(ModelError(code: "timeout", message: "late")), nowMs: 2_900)
        #expect(step == .end(TurnTaking.Ended(turn: Self.turn(), atMs: 2_000, cause: .silence)))
    }

    @Test func aVerdictForAnotherTurnChangesNothing() {
        var floor = Self.asking()
        let r18 = floor.verdict("item_9", .success(TurnVerdict(complete: true, probability: 1)), nowMs: 2_250)
        #expect(r18 == nil)
        #expect(floor.isEndPending && floor.turn == Self.turn())
    }

    @Test func speakingAgainWhileAskedWithdrawsTheQuestionAndKeepsTheTurn() {
        var floor = Self.asking()
        let start = floor.speechStarted(Self.turn(2, onsetMs: 2_500), during: .none, interruptResponse: true, settings: Self.interruption, expectsWords: true)
        #expect(start == .continued(withdraw: .withdraw(itemID: "item_1")))
        #expect(floor.turn == Self.turn() && !floor.isEndPending)
        // A late verdict on the withdrawn question is no longer wanted.
        let r19 = floor.verdict("item_1", .success(TurnVerdict(complete: true, probability: 1)), nowMs: 2_600)
        #expect(r19 == nil)
        #expect(!floor.isIdle)
    }

    @Test func speakingAgainWhileHeldWithdrawsNothing() {
        var floor = Self.asking()
        _ = floor.verdict("item_1", .success(TurnVerdict(complete: false, probability: 0.2)), nowMs: 2_250)
        let start = floor.speechStarted(Self.turn(2), during: .none, interruptResponse: true, settings: Self.interruption, expectsWords: true)
        #expect(start == .continued(withdraw: nil))
        #expect(floor.turn == Self.turn())
    }

    @Test func theClientsAudioStoppingEndsAPendingTurn() {
        var floor = Self.asking()
        let r20 = floor.audioStopped()
        #expect(r20 == .end(TurnTaking.Ended(turn: Self.turn(), atMs: 2_000, cause: .maxWait)))
        var quiet = TurnTaking()
        let r21 = quiet.audioStopped()
        let r22 = quiet.audio(atMs: 10_000)
        #expect(r21 == nil && r22 == nil)
    }

    // MARK: Turns taken away

    @Test func aTurnCommittedByHandIsHandedOverAndItsQuestionWithdrawn() {
        var floor = Self.asking()
        let taken = floor.take()
        #expect(taken?.turn == Self.turn() && taken?.withdraw == .withdraw(itemID: "item_1"))
        #expect(floor.isIdle && !floor.isEndPending)
        let r23 = floor.take()
        #expect(r23 == nil)
    }

    @Test func aDroppedTurnResumesTheReplyItPaused() {
        var (floor, _) = Self.started(during: .spoken)
        let dropped = floor.drop()
        #expect(dropped.dropped && dropped.withdraw == nil && dropped.resumes)
        #expect(floor.isIdle && !floor.isPaused)
        var empty = TurnTaking()
        let nothing = empty.drop()
        #expect(!nothing.dropped && nothing.withdraw == nil && !nothing.resumes)
    }

    @Test func leavingSemanticVADEndsAPendingTurnBySilence() {
        var floor = Self.asking()
        let ended = floor.semanticEnded()
        #expect(ended?.withdraw == .withdraw(itemID: "item_1"))
        #expect(ended?.ended == TurnTaking.Ended(turn: Self.turn(), atMs: 2_000, cause: .silence))
        #expect(floor.isIdle)
        var plain = Self.started().0
        let r24 = plain.semanticEnded()
        #expect(r24 == nil, "nothing was pending")
    }

    @Test func forgettingTheEndWithdrawsOnlyAQuestionStillOut() {
        var floor = Self.asking()
        let r25 = floor.forgetEnding()
        #expect(r25 == .withdraw(itemID: "item_1"))
        let r26 = floor.forgetEnding()
        #expect(r26 == nil)
        #expect(!floor.isIdle, "the turn itself goes on")
    }
}
