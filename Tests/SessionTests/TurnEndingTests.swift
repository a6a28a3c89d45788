import Models
@testable import Session
import Testing
import SpeechContracts
@testable import SessionEngine

/// `semantic_vad`'s end-of-turn rule alone: silences, verdicts and the audio clock in, decisions out.
@Suite struct TurnEndingTests {
    let settings = TurnEnding.Settings(maxWaitMs: 4000, silenceMs: 500, completeAt: 0.8)

    @Test func aCompleteVerdictEndsTheTurnAtOnce() {
        var ending = TurnEnding(settings: settings)
        #expect(ending.silenceHeard(speechEndMs: 1000) == .ask)
        #expect(ending.audio(atMs: 1250) == nil)
        #expect(ending.verdict(TurnVerdict(complete: true, probability: 0.97), atMs: 1250) == .end(.model))
        #expect(!ending.isPending)
        #expect(ending.speechEndMs == 1000)
    }

    @Test func onANoisyInputAgreementWaitsPastAPauseFirst() {
        var noisy = settings
        noisy.readsWords = true
        noisy.noisyInput = true
        var ending = TurnEnding(settings: noisy)
        _ = ending.silenceHeard(speechEndMs: 1000)
        #expect(ending.verdict(TurnVerdict(complete: true, probability: 0.97), atMs: 1250) == nil)
        #expect(ending.wordsHeard("I need a flight to Boston.", speechEndMs: 1000, atMs: 1300) == nil)
        // A pause of 1 s is not the end, however sure both are; past the finished words' wait it is.
        #expect(ending.audio(atMs: 2000) == nil)
        #expect(ending.audio(atMs: 2199) == nil)
        #expect(ending.audio(atMs: 2200) == .end(.model))
        // Words that say "not over" still hold it longer.
        var held = TurnEnding(settings: noisy)
        _ = held.silenceHeard(speechEndMs: 1000)
        _ = held.verdict(TurnVerdict(complete: true, probability: 0.97), atMs: 1250)
        _ = held.wordsHeard("I need a flight to", speechEndMs: 1000, atMs: 1300)
        #expect(held.audio(atMs: 2200) == nil)
    }

    @Test func anIncompleteVerdictWaitsUpToTheLongestWaitThenEnds() {
        var ending = TurnEnding(settings: settings)
        _ = ending.silenceHeard(speechEndMs: 1000)
        #expect(ending.verdict(TurnVerdict(complete: false, probability: 0.1), atMs: 1250) == nil)
        #expect(ending.audio(atMs: 4999) == nil)
        #expect(ending.audio(atMs: 5000) == .end(.maxWait))
    }

    @Test func aProbabilityBelowTheEagernessCutIsNotComplete() {
        var ending = TurnEnding(settings: settings)
        _ = ending.silenceHeard(speechEndMs: 0)
        // The model's own cut says complete at 0.53; auto asks for 0.8.
        #expect(ending.verdict(TurnVerdict(complete: true, probability: 0.53), atMs: 1250) == nil)
        #expect(ending.isPending)
    }

    @Test func speechAgainWithdrawsTheQuestionAndTheTurnGoesOn() {
        var ending = TurnEnding(settings: settings)
        _ = ending.silenceHeard(speechEndMs: 1000)
        #expect(ending.speechResumed() == .withdraw)
        #expect(!ending.isPending)
        // A verdict that comes after is for a question withdrawn.
        #expect(ending.verdict(TurnVerdict(complete: true, probability: 0.99), atMs: 1250) == nil)
        #expect(ending.audio(atMs: 9000) == nil)
    }

    @Test func speechAgainAfterAnIncompleteVerdictNeedsNoWithdrawal() {
        var ending = TurnEnding(settings: settings)
        _ = ending.silenceHeard(speechEndMs: 1000)
        _ = ending.verdict(TurnVerdict(complete: false, probability: 0.2), atMs: 1250)
        #expect(ending.speechResumed() == nil)
        #expect(ending.audio(atMs: 9000) == nil)
    }

    @Test func aModelThatFailsLeavesTheSilenceRule() {
        var ending = TurnEnding(settings: settings)
        _ = ending.silenceHeard(speechEndMs: 1000)
        _ = ending.modelFailed(atMs: 1250)
        #expect(ending.audio(atMs: 1499) == nil)
        #expect(ending.audio(atMs: 1500) == .end(.silence))
    }

    @Test func aModelThatNeverAnswersHoldsTheTurnNoLongerThanTheLongestWait() {
        var ending = TurnEnding(settings: settings)
        _ = ending.silenceHeard(speechEndMs: 0)
        #expect(ending.audio(atMs: 3999) == nil)
        #expect(ending.audio(atMs: 4000) == .end(.maxWait))
    }
}

/// The engine under `semantic_vad` with an end-of-turn model: scripted speech (the scripted VAD
/// hears loud samples as speech) and scripted verdicts.
@Suite struct SemanticTurnEngineTests {
    private func engine(eagerness: ServerVAD.Eagerness = .auto) -> SessionEngine { .semantic(eagerness: eagerness) }

    private func feed(_ engine: inout SessionEngine, silentMs: Int = 0, loudMs: Int = 0) -> [SessionAction] {
        engine.feed(silentMs: silentMs, loudMs: loudMs)
    }

    /// The item the end-of-turn model was asked about, if it was.
    private func judged(_ actions: [SessionAction]) -> String? {
        for case .turnModel(.judge(let itemID)) in actions { return itemID }
        return nil
    }

    @Test func aShortSilenceAsksTheModelAndACompleteVerdictEndsTheTurnWhereSpeechEnded() throws {
        var engine = engine()
        _ = feed(&engine, silentMs: 320)
        let spoken = feed(&engine, loudMs: 640) + feed(&engine, silentMs: 260)
        // Asked after 200 ms of silence, not the 500 ms server_vad would wait.
        let asked = try #require(judged(spoken), "\(spoken.types)")
        #expect(!spoken.types.contains("input_audio_buffer.speech_stopped"))
        // The model judges the buffer's last 8 s at most: here the speech and the 260 ms after it
        // (the silence before the speech is not kept in the buffer).
        let judgedAudio = engine.turnModelAudio
        #expect(judgedAudio.samples.count * 1000 / judgedAudio.sampleRate == 640 + 260)
        let ended = engine.handle(.turnVerdict(itemID: asked, .success(TurnVerdict(complete: true, probability: 0.95))))
        #expect(ended.types.starts(with: ["input_audio_buffer.speech_stopped", "input_audio_buffer.committed"]), "\(ended.types)")
        #expect(ended.turnEnds == [.model])
        guard case .speechStopped(let endMs, _)? = ended.events.first?.kind else { Issue.record("no speech_stopped"); return }
        #expect(endMs == 960)
    }

    @Test func speakingAgainAfterAnIncompleteVerdictKeepsOneTurn() throws {
        var engine = engine()
        _ = feed(&engine, silentMs: 320)
        let first = feed(&engine, loudMs: 640) + feed(&engine, silentMs: 260)
        let asked = try #require(judged(first))
        #expect(engine.handle(.turnVerdict(itemID: asked, .success(TurnVerdict(complete: false, probability: 0.1)))).types.isEmpty)
        // A 1 s pause, then the rest of the sentence: no event at all for the pause.
        let rest = feed(&engine, silentMs: 740) + feed(&engine, loudMs: 640) + feed(&engine, silentMs: 260)
        #expect(!rest.types.contains("input_audio_buffer.speech_started") && !rest.types.contains("input_audio_buffer.committed"), "\(rest.types)")
        let again = try #require(judged(rest))
        #expect(again == asked)
        let ended = engine.handle(.turnVerdict(itemID: again, .success(TurnVerdict(complete: true, probability: 0.97))))
        #expect(ended.turnEnds == [.model])
        #expect(ended.types.filter { $0 == "input_audio_buffer.committed" }.count == 1)
    }

    @Test func speechBeforeTheVerdictWithdrawsTheQuestion() throws {
        var engine = engine()
        _ = feed(&engine, silentMs: 320)
        let first = feed(&engine, loudMs: 640) + feed(&engine, silentMs: 260)
        let asked = try #require(judged(first))
        let resumed = feed(&engine, loudMs: 200)
        #expect(resumed.types == ["turn.cancel"], "\(resumed.types)")
        // The late answer to the withdrawn question changes nothing.
        #expect(engine.handle(.turnVerdict(itemID: asked, .success(TurnVerdict(complete: true, probability: 0.99)))).isEmpty)
    }

    @Test func anIncompleteTurnEndsAtTheEagernessLongestWait() throws {
        var engine = engine(eagerness: .high)
        _ = feed(&engine, silentMs: 320)
        let first = feed(&engine, loudMs: 640) + feed(&engine, silentMs: 260)
        let asked = try #require(judged(first))
        _ = engine.handle(.turnVerdict(itemID: asked, .success(TurnVerdict(complete: false, probability: 0.2))))
        // high: 2 s after the speech ended (at 960 ms), so at 2,960 ms of audio.
        let before = feed(&engine, silentMs: 1700)
        #expect(before.turnEnds.isEmpty)
        let after = feed(&engine, silentMs: 100)
        #expect(after.turnEnds == [.maxWait], "\(after.types)")
    }

    @Test func aFailedModelEndsTheTurnByTheEagernessSilence() throws {
        var engine = engine()
        _ = feed(&engine, silentMs: 320)
        let first = feed(&engine, loudMs: 640) + feed(&engine, silentMs: 260)
        let asked = try #require(judged(first))
        let failed = engine.handle(.turnVerdict(itemID: asked, .failure(ModelError(code: "speech_helper_unavailable", message: "down"))))
        #expect(failed.turnEnds.isEmpty)
        // auto's silence is 500 ms from the speech's end at 960 ms.
        let ended = feed(&engine, silentMs: 260)
        #expect(ended.turnEnds == [.silence], "\(ended.types)")
    }

    @Test func serverVADNeverAsks() throws {
        var options = SessionEngine.Options()
        options.voiceActivityModel = ScriptedVoiceActivityModel()
        options.judgesTurns = true
        options.configuration.turnDetection = ServerVAD(threshold: 0.5, prefixPaddingMs: 0, silenceDurationMs: 500, createResponse: false)
        var engine = SessionEngine(seed: 9, options: options)
        _ = engine.start()
        let actions = feed(&engine, silentMs: 320) + feed(&engine, loudMs: 640) + feed(&engine, silentMs: 700)
        #expect(judged(actions) == nil)
        #expect(actions.turnEnds == [.silence])
    }

    @Test func aTurnHeldOpenEndsWhenTheClientsAudioStops() throws {
        var engine = engine()
        _ = feed(&engine, silentMs: 320)
        let asked = try #require(judged(feed(&engine, loudMs: 640) + feed(&engine, silentMs: 260)))
        _ = engine.handle(.turnVerdict(itemID: asked, .success(TurnVerdict(complete: false, probability: 0.2))))
        let stopped = engine.handle(.audioStopped)
        #expect(stopped.turnEnds == [.maxWait])
        #expect(stopped.types.starts(with: ["input_audio_buffer.speech_stopped", "input_audio_buffer.committed"]), "\(stopped.types)")
    }

    @Test func clearingTheBufferWithdrawsTheQuestion() throws {
        var engine = engine()
        _ = feed(&engine, silentMs: 320)
        _ = try #require(judged(feed(&engine, loudMs: 640) + feed(&engine, silentMs: 260)))
        let cleared = engine.handle(.client(ClientEvent(.inputAudioClear)))
        #expect(cleared.types.contains("turn.cancel"), "\(cleared.types)")
    }
}

@Suite struct TurnEndingAudioStopTests {
    @Test func aHeldTurnEndsWhenTheAudioStops() {
        var ending = TurnEnding(settings: TurnEnding.Settings(maxWaitMs: 4000, silenceMs: 500))
        _ = ending.silenceHeard(speechEndMs: 1000)
        _ = ending.verdict(TurnVerdict(complete: false, probability: 0.1), atMs: 1250)
        #expect(ending.audioStopped() == .end(.maxWait))
        #expect(ending.audioStopped() == nil)
    }
}

/// The audio model and the words together (the table in `TurnEnding`'s documentation).
@Suite struct TurnEndingWordsTests {
    let settings: TurnEnding.Settings = {
        var settings = TurnEnding.Settings(maxWaitMs: 4000, silenceMs: 500, completeAt: 0.8, readsWords: true)
        settings.finishedWaitMs = 1200
        settings.spellingOutWaitMs = 1500
        settings.wordsWaitMs = 600
        return settings
    }()
    let complete = TurnVerdict(complete: true, probability: 0.95)
    let incomplete = TurnVerdict(complete: false, probability: 0.2)

    /// A silence after speech that ended at 1000 ms, asked about; and `text`'s words for it, when given.
    private func asked(_ settings: TurnEnding.Settings? = nil, heard text: String? = nil, atMs: Int = 1200) -> TurnEnding {
        var ending = TurnEnding(settings: settings ?? self.settings)
        _ = ending.silenceHeard(speechEndMs: 1000)
        if let text { _ = ending.wordsHeard(text, speechEndMs: 1000, atMs: atMs) }
        return ending
    }

    @Test func audioAndWordsThatAgreeEndTheTurnAtOnce() {
        var ending = asked()
        #expect(ending.verdict(complete, atMs: 1230) == nil)  // the words are waited for
        #expect(ending.wordsHeard("What is the weather like in Paris today?", speechEndMs: 1000, atMs: 1310) == .end(.model))
    }

    /// A server's eagerness waits a little past a clause's comma before audio and words that
    /// agree end the turn ("Thank you very much," then more).
    @Test func audioAndWordsThatAgreeWaitPastAComma() {
        var settings = settings
        settings.agreedWaitMs = 500
        var ending = asked(settings)
        #expect(ending.wordsHeard("Thank you very much.", speechEndMs: 1000, atMs: 1250) == nil)
        #expect(ending.verdict(complete, atMs: 1280) == nil)
        #expect(ending.audio(atMs: 1499) == nil)
        #expect(ending.audio(atMs: 1500) == .end(.model))
        // The speaker goes on in the comma's pause: nothing ended.
        var comma = asked(settings, heard: "Thank you very much.", atMs: 1250)
        _ = comma.verdict(complete, atMs: 1280)
        #expect(comma.speechResumed() == nil)
        #expect(comma.audio(atMs: 1600) == nil)
        #expect(ServerVAD.Eagerness.auto.turnEnding(readsWords: true).agreedWaitMs == 500)
    }

    @Test func wordsFirstThenACompleteVerdictEndsAtOnce() {
        var ending = asked()
        #expect(ending.wordsHeard("Good morning, how are you?", speechEndMs: 1000, atMs: 1200) == nil)
        #expect(ending.verdict(complete, atMs: 1230) == .end(.model))
    }

    @Test func unfinishedWordsHoldTheTurnHoweverSureTheAudioModelIs() {
        var ending = asked()
        _ = ending.wordsHeard("I need a flight to", speechEndMs: 1000, atMs: 1200)
        #expect(ending.verdict(complete, atMs: 1230) == nil)
        #expect(ending.audio(atMs: 2000) == nil)  // a 1 s pause mid-thought
        #expect(ending.audio(atMs: 4999) == nil)
        #expect(ending.audio(atMs: 5000) == .end(.maxWait))
    }

    @Test func finishedWordsEndTheTurnPastAPauseWhenTheAudioModelSaysNot() {
        var ending = asked()
        _ = ending.wordsHeard("Please book me a table for two at eight.", speechEndMs: 1000, atMs: 1200)
        #expect(ending.verdict(incomplete, atMs: 1230) == nil)
        #expect(ending.audio(atMs: 2199) == nil)
        #expect(ending.audio(atMs: 2200) == .end(.words))
    }

    /// A question Smart Turn does not confirm ("could you please tell me what twelve times seven
    /// is?" scored 0.01 to 0.45 in eight voices of nine) is answered at the shorter wait; a
    /// fragment with a question mark is not.
    @Test func aQuestionTheAudioModelDoesNotConfirmEndsAtTheQuestionsWait() {
        var settings = settings
        settings.askedWaitMs = 600
        var ending = asked(settings, heard: "Could you please tell me what twelve times seven is?")
        #expect(ending.verdict(incomplete, atMs: 1230) == nil)
        #expect(ending.audio(atMs: 1599) == nil)
        #expect(ending.audio(atMs: 1600) == .end(.words))
        // With no verdict yet, the same.
        var early = asked(settings, heard: "What is one thousand divided by eight?")
        #expect(early.audio(atMs: 1600) == .end(.words))
        // A fragment with a question mark holds the turn as it did.
        var fragment = asked(settings, heard: "Can you tell me?")
        #expect(fragment.verdict(incomplete, atMs: 1230) == nil)
        #expect(fragment.audio(atMs: 2200) == nil)
    }

    /// On a noisy input a question waits the finished words' wait, as "end now" does; and a
    /// question never waits longer than finished words (a server that tuned those shorter).
    @Test func aQuestionOnANoisyInputWaitsAsFinishedWordsDo() {
        var noisy = settings
        noisy.askedWaitMs = 600
        noisy.noisyInput = true
        var ending = asked(noisy, heard: "What is the weather like in Paris today?")
        #expect(ending.verdict(incomplete, atMs: 1230) == nil)
        #expect(ending.audio(atMs: 2199) == nil)
        #expect(ending.audio(atMs: 2200) == .end(.words))
        var short = settings
        short.finishedWaitMs = 400
        short.askedWaitMs = 600
        var quick = asked(short, heard: "What is the weather like in Paris today?")
        #expect(quick.audio(atMs: 1400) == .end(.words))
    }

    @Test func finishedWordsWithNoVerdictYetEndPastAPauseToo() {
        var ending = asked()
        _ = ending.wordsHeard("Yes.", speechEndMs: 1000, atMs: 1200)
        #expect(ending.audio(atMs: 2200) == .end(.words))
    }

    @Test func digitsBeingReadOutWaitPastAPauseWhateverTheAudioSays() {
        var ending = asked()
        _ = ending.wordsHeard("My account number is four five", speechEndMs: 1000, atMs: 1200)
        #expect(ending.verdict(complete, atMs: 1230) == nil)
        #expect(ending.audio(atMs: 2499) == nil)
        #expect(ending.audio(atMs: 2500) == .end(.words))
    }

    @Test func aCompleteVerdictWaitsForTheWordsOnlySoLong() {
        var ending = asked()
        #expect(ending.verdict(complete, atMs: 1230) == nil)
        #expect(ending.audio(atMs: 1599) == nil)
        #expect(ending.audio(atMs: 1600) == .end(.model))
    }

    @Test func withoutWordsAVerdictDecidesAlone() {
        var ending = TurnEnding(settings: TurnEnding.Settings(maxWaitMs: 4000, silenceMs: 500, completeAt: 0.8))
        _ = ending.silenceHeard(speechEndMs: 1000)
        #expect(ending.verdict(complete, atMs: 1230) == .end(.model))
    }

    @Test func wordsOfAnEarlierSilenceDoNotCount() {
        var ending = asked()
        _ = ending.wordsHeard("I need a flight to", speechEndMs: 1000, atMs: 1200)
        #expect(ending.speechResumed() == .withdraw)
        _ = ending.silenceHeard(speechEndMs: 3000)
        // The words for 1000 are gone: a complete verdict waits for this silence's words.
        #expect(ending.verdict(complete, atMs: 3230) == nil)
        #expect(ending.wordsHeard("I need a flight to Boston on Friday.", speechEndMs: 3000, atMs: 3350) == .end(.model))
    }

    @Test func aFailedModelWithUnfinishedWordsStillHolds() {
        var ending = asked()
        _ = ending.wordsHeard("Add milk, eggs and", speechEndMs: 1000, atMs: 1200)
        #expect(ending.modelFailed(atMs: 1230) == nil)
        #expect(ending.audio(atMs: 1500) == nil)
        #expect(ending.audio(atMs: 5000) == .end(.maxWait))
    }

    /// The server's tuning moves auto's operating point and no other eagerness's.
    @Test func theServersTuningMovesAutoOnly() {
        let tuning = TurnEnding.Tuning(completeAt: 0.5, finishedWaitMs: 600)
        let auto = ServerVAD.Eagerness.auto.turnEnding(readsWords: true, tuning: tuning)
        #expect(auto.completeAt == 0.5 && auto.finishedWaitMs == 600)
        // Digits read out still wait past the pause auto always waited through.
        #expect(auto.spellingOutWaitMs == 1_500)
        let low = ServerVAD.Eagerness.low.turnEnding(readsWords: true, tuning: tuning)
        #expect(low == ServerVAD.Eagerness.low.turnEnding(readsWords: true))
        #expect(ServerVAD.Eagerness.auto.turnEnding(readsWords: true, tuning: .init()).finishedWaitMs == 1_200)
        #expect(ServerVAD.Eagerness.auto.turnEnding(readsWords: true, tuning: .init()).askedWaitMs == 600)
        #expect(ServerVAD.Eagerness.auto.turnEnding(readsWords: true, tuning: .init(askedWaitMs: 900)).askedWaitMs == 900)
        #expect(ServerVAD.Eagerness.low.turnEnding(readsWords: true, tuning: .init(askedWaitMs: 900)).askedWaitMs == 800)
        #expect(TurnEnding.Tuning().completeAt == nil && TurnEnding.Tuning().finishedWaitMs == nil && TurnEnding.Tuning().askedWaitMs == nil)
    }

    @Test func finishedWordsTheModelDoesNotConfirmEndTheTurnAtTheTunedWait() {
        var settings = ServerVAD.Eagerness.auto.turnEnding(readsWords: true, tuning: .init(finishedWaitMs: 600))
        settings.readsWords = true
        var ending = TurnEnding(settings: settings)
        _ = ending.silenceHeard(speechEndMs: 1000)
        #expect(ending.verdict(TurnVerdict(complete: false, probability: 0.3), atMs: 1230) == nil)
        #expect(ending.wordsHeard("What is the weather like in Paris today?", speechEndMs: 1000, atMs: 1350) == nil)
        #expect(ending.audio(atMs: 1599) == nil)
        #expect(ending.audio(atMs: 1600) == .end(.words))
    }
}
