import Models
@testable import Session
import Testing
import SpeechContracts
@testable import SessionEngine

/// The engine with a recogniser that decodes as the user goes quiet: it is told of each silence
/// once, and the words it answers weigh in the turn's end beside the audio model's verdict.
@Suite struct TurnWordsEngineTests {
    private func engine() -> SessionEngine {
        .semantic { options in
            options.transcribes = true
            options.readsTurnWords = true
        }
    }

    private func quiets(_ actions: [SessionAction]) -> [String] {
        actions.compactMap { if case .transcription(.quiet(let itemID)) = $0 { itemID } else { nil } }
    }

    private func spokeAgain(_ actions: [SessionAction]) -> [String] {
        actions.compactMap { if case .transcription(.spokeAgain(let itemID)) = $0 { itemID } else { nil } }
    }

    private func judged(_ actions: [SessionAction]) -> String? {
        for case .turnModel(.judge(let itemID)) in actions { return itemID }
        return nil
    }

    @Test func theRecogniserIsToldOncePerSilenceBeforeTheModelIsAsked() throws {
        var engine = engine()
        _ = engine.feed(silentMs: 320)
        let speech = engine.feed(loudMs: 640)
        #expect(quiets(speech).isEmpty)
        let quiet = engine.feed(silentMs: 140)
        let itemID = try #require(quiets(quiet).first, "\(quiet)")
        #expect(judged(quiet) == nil)
        let more = engine.feed(silentMs: 120)
        #expect(quiets(more).isEmpty)
        #expect(judged(more) == itemID)
    }

    /// Speech after a quiet is told once (the quiet's decode no longer ends the turn), and again
    /// only after the next quiet; speech before any quiet tells nothing.
    @Test func theRecogniserIsToldOnceWhenTheSpeakerGoesOnAfterAQuiet() throws {
        var engine = engine()
        _ = engine.feed(silentMs: 320)
        #expect(spokeAgain(engine.feed(loudMs: 640)).isEmpty)
        let itemID = try #require(quiets(engine.feed(silentMs: 140)).first)
        let on = engine.feed(loudMs: 100)
        #expect(spokeAgain(on) == [itemID])
        #expect(spokeAgain(engine.feed(loudMs: 300)).isEmpty)
        #expect(quiets(engine.feed(silentMs: 140)) == [itemID])
        #expect(spokeAgain(engine.feed(loudMs: 100)) == [itemID])
    }

    @Test func unfinishedWordsHoldATurnTheModelCallsComplete() throws {
        var engine = engine()
        _ = engine.feed(silentMs: 320)
        let first = engine.feed(loudMs: 640) + engine.feed(silentMs: 260)
        let itemID = try #require(judged(first))
        #expect(engine.handle(.transcription(itemID: itemID, .settled("I need a flight to"))).turnEnds.isEmpty)
        #expect(engine.handle(.turnVerdict(itemID: itemID, .success(TurnVerdict(complete: true, probability: 0.97)))).turnEnds.isEmpty)
        // A one-second pause, then the rest: the same turn.
        let rest = engine.feed(silentMs: 740) + engine.feed(loudMs: 640) + engine.feed(silentMs: 260)
        #expect(rest.turnEnds.isEmpty && !rest.types.contains("input_audio_buffer.speech_started"), "\(rest.types)")
        #expect(quiets(rest) == [itemID])
        #expect(engine.handle(.transcription(itemID: itemID, .settled("I need a flight to Boston on Friday."))).turnEnds.isEmpty)
        #expect(engine.handle(.turnVerdict(itemID: itemID, .success(TurnVerdict(complete: true, probability: 0.97)))).turnEnds.isEmpty)
        // Audio and words agree: the turn ends past a comma's pause (auto: 500 ms of silence).
        #expect(engine.feed(silentMs: 300).turnEnds == [.model])
    }

    /// auto: finished words end a turn the model calls incomplete 1.2 s after the speech ended
    /// (at 960 ms), a question 0.6 s after it.
    @Test(arguments: [("Please book me a table for two at eight.", 900), ("Good morning, how are you?", 300)])
    func finishedWordsEndATurnTheModelCallsIncompletePastAPause(text: String, quietMs: Int) throws {
        var engine = engine()
        _ = engine.feed(silentMs: 320)
        let first = engine.feed(loudMs: 640) + engine.feed(silentMs: 260)
        let itemID = try #require(judged(first))
        _ = engine.handle(.transcription(itemID: itemID, .settled(text)))
        #expect(engine.handle(.turnVerdict(itemID: itemID, .success(TurnVerdict(complete: false, probability: 0.3)))).turnEnds.isEmpty)
        #expect(engine.feed(silentMs: quietMs).turnEnds.isEmpty)
        #expect(engine.feed(silentMs: 100).turnEnds == [.words])
    }

    @Test func wordsOfSpeechThatWentOnDoNotCount() throws {
        var engine = engine()
        _ = engine.feed(silentMs: 320)
        let quiet = engine.feed(loudMs: 640) + engine.feed(silentMs: 140)
        let itemID = try #require(quiets(quiet).first)
        // The user speaks again before the words come: they are for a silence that is over.
        _ = engine.feed(loudMs: 100)
        _ = engine.handle(.transcription(itemID: itemID, .settled("I need a flight to")))
        let stopped = engine.feed(silentMs: 260)
        #expect(judged(stopped) == itemID)
        // The verdict alone, the words awaited: complete ends the turn after the words' wait
        // (2.5 s from the speech's end; 260 ms of it already past).
        #expect(engine.handle(.turnVerdict(itemID: itemID, .success(TurnVerdict(complete: true, probability: 0.97)))).turnEnds.isEmpty)
        #expect(engine.feed(silentMs: 2_000).turnEnds.isEmpty)
        #expect(engine.feed(silentMs: 500).turnEnds == [.model])
    }
}
