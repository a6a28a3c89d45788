import Loop
import Synchronization
import Testing
@testable import Models
@testable import Session
@testable import SpeechContracts
@testable import SessionEngine

/// A speculative reply's first piece of speech is made while the turn is ending
/// (`SpeechStep.prepare`, `PreparedSpeech`), and the reply's output uses it when its first
/// sentence is that text in that voice. The engine's side with scripted input; the driver's side
/// with a synthesiser that answers on the loop. No sockets, no models.
@Suite struct PreparedSpeechTests {
    // MARK: The engine asks for it

    private func engine(spoken: Bool = true) -> SessionEngine {
        .semantic(createResponse: true, seed: 11) { options in
            options.transcribes = true
            options.synthesizes = true
            options.configuration.turnDetection?.speculativeResponse = true
            options.configuration.outputModalities = spoken ? .audio : .text
            options.configuration.voice = "marin"
        }
    }

    /// Speech, then the silence that asks the end-of-turn model: the turn's item id.
    private func speakAndPause(_ engine: inout SessionEngine) throws -> String {
        _ = engine.feed(silentMs: 320)
        let actions = engine.feed(loudMs: 640) + engine.feed(silentMs: 260)
        for case .turnModel(.judge(let itemID)) in actions { return itemID }
        throw HarnessFailure(description: "the model was not asked; got \(actions.types)")
    }

    private func prepared(_ actions: [SessionAction]) -> [(id: String, voice: SpeechVoice, text: String)] {
        actions.compactMap { if case .speech(.prepare(let id, let voice, let text)) = $0 { (id, voice, text) } else { nil } }
    }

    @Test func aSpokenSpeculationAsksOnceForItsFirstClauseAndTheResponseSpeaksUnderItsID() throws {
        var engine = engine()
        let itemID = try speakAndPause(&engine)
        let speculation = try engine.handle(.transcription(itemID: itemID, .settled("can you book me a table"))).speculation()
        // Not yet a clause of three words: nothing to make.
        #expect(prepared(engine.handle(.modelDelta(responseID: speculation.id, text: "Sure,"))).isEmpty)
        let clause = engine.handle(.modelDelta(responseID: speculation.id, text: " I can do that, "))
        let asked = prepared(clause)
        #expect(asked.count == 1)
        #expect(asked.first?.id == speculation.id)
        #expect(asked.first?.text == "Sure, I can do that,")
        #expect(asked.first?.voice == SpeechVoice(name: "marin"))
        #expect(clause.events.isEmpty, "still unheard and unseen: \(clause.types)")
        // Later pieces are the output's to ask for, once the reply is used.
        let rest = engine.handle(.modelDelta(responseID: speculation.id, text: "for what time? "))
            + engine.handle(.modelFinished(responseID: speculation.id, usage: nil))
        #expect(prepared(rest).isEmpty)
        _ = engine.handle(.turnVerdict(itemID: itemID, .success(TurnVerdict(complete: true, probability: 0.97))))
        let answered = engine.handle(.transcription(itemID: itemID, .final("Can you book me a table?")))
        #expect(answered.speculationOutcomes == [.used])
        // The spoken reply keeps the speculation's id, the key its prepared sound is found by.
        let spoken = answered.compactMap { if case .speech(.text(let at, _, _, let piece)) = $0 { (at.responseID, piece) } else { nil } }
        #expect(spoken.first?.0 == speculation.id)
        #expect(spoken.map(\.1).joined() == "Sure, I can do that, for what time? ")
    }

    @Test func aReplyWithoutAMarkIsPreparedWhenTheModelHasSaidAll() throws {
        var engine = engine()
        let itemID = try speakAndPause(&engine)
        let speculation = try engine.handle(.transcription(itemID: itemID, .settled("twelve times seven"))).speculation()
        #expect(prepared(engine.handle(.modelDelta(responseID: speculation.id, text: "Eighty four"))).isEmpty)
        let finished = prepared(engine.handle(.modelFinished(responseID: speculation.id, usage: nil)))
        #expect(finished.map(\.text) == ["Eighty four"])
    }

    @Test func aTextReplyOrACallToAToolPreparesNothing() throws {
        var text = engine(spoken: false)
        let textItem = try speakAndPause(&text)
        let textSpeculation = try text.handle(.transcription(itemID: textItem, .settled("hello there"))).speculation()
        #expect(prepared(text.handle(.modelDelta(responseID: textSpeculation.id, text: "Hello. How can I help?"))).isEmpty)

        var tool = engine()
        let toolItem = try speakAndPause(&tool)
        let toolSpeculation = try tool.handle(.transcription(itemID: toolItem, .settled("weather in Paris"))).speculation()
        var actions = tool.handle(.modelToolCallStarted(responseID: toolSpeculation.id, index: 0, callID: "call_1", name: "get_weather"))
        actions += tool.handle(.modelDelta(responseID: toolSpeculation.id, text: "Let me look that up. "))
        #expect(prepared(actions).isEmpty)
    }

    @Test func onAPartialsGuessNothingIsMadeUntilTheWholeDecodeSaysTheSameWords() throws {
        var engine = engine()
        let itemID = try speakAndPause(&engine)
        let speculation = try engine.handle(.transcription(itemID: itemID, .partial("what is twelve times"))).speculation()
        #expect(prepared(engine.handle(.modelDelta(responseID: speculation.id, text: "Twelve times what? "))).isEmpty)
        // The whole decode hears more: the reply starts again, and its sound is made.
        let restarted = engine.handle(.transcription(itemID: itemID, .settled("What is twelve times seven?")))
        #expect(restarted.speculationOutcomes == [.restarted])
        let again = try restarted.speculation()
        #expect(prepared(engine.handle(.modelDelta(responseID: again.id, text: "Eighty-four. "))).map(\.text) == ["Eighty-four."])

        // A guess the whole decode confirms keeps its reply, and its sound is made then.
        var confirmed = self.engine()
        let item = try speakAndPause(&confirmed)
        let guess = try confirmed.handle(.transcription(itemID: item, .partial("thank you"))).speculation()
        #expect(prepared(confirmed.handle(.modelDelta(responseID: guess.id, text: "You're welcome! "))).isEmpty)
        let settled = confirmed.handle(.transcription(itemID: item, .settled("Thank you.")))
        #expect(settled.speculationOutcomes.isEmpty)
        #expect(prepared(settled).map(\.id) == [guess.id])
        #expect(prepared(settled).map(\.text) == ["You're welcome!"])
    }

    // MARK: The output uses it

    /// Answers each request on the loop with `chunks` pieces of audio then `finished`, and notes
    /// the texts asked for and the calls cancelled.
    final class LoopVoice: Synthesizer, @unchecked Sendable {
        let name = "loop-voice"
        let asked = Mutex<[String]>([])
        let cancelled = Mutex<[String]>([])

        final class Call: ModelCall {
            let text: String
            let voice: LoopVoice
            var stopped = false
            init(text: String, voice: LoopVoice) {
                self.text = text
                self.voice = voice
            }
            func cancel() {
                stopped = true
                voice.cancelled.withLock { $0.append(text) }
            }
        }

        func speak(_ text: String, voice: SpeechVoice, urgency: SynthesisUrgency, on loop: EventLoop,
                   _ onEvent: @escaping (SynthesisEvent) -> Void) -> any ModelCall {
            asked.withLock { $0.append(text) }
            let call = Call(text: text, voice: self)
            // Two pieces of 100 ms a few loop turns apart, so some come before a taker and some after.
            loop.schedule(after: 0) {
                guard !call.stopped else { return }
                onEvent(.audio([Int16](repeating: 1, count: 2_400), sampleRate: 24_000))
                loop.schedule(after: 0.05) {
                    guard !call.stopped else { return }
                    onEvent(.audio([Int16](repeating: 2, count: 2_400), sampleRate: 24_000))
                    onEvent(.finished)
                }
            }
            return call
        }
    }

    /// A reply whose first sentence is `first`, spoken with a sound prepared for `preparedText`
    /// `takenAfter` seconds before the output starts; what the voice was asked for, what was
    /// cancelled, and the reply's audio in milliseconds.
    func speak(first: String, preparedText: String, preparedVoice: String = "marin", takenAfter: Double)
        throws -> (asked: [String], cancelled: [String], audioMs: Int) {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let pool = try WorkerPool(name: "prepared-speech-test", threads: 1, queueLimit: 64)
        let voice = LoopVoice()
        var audioMs = 0
        var output: SpeechOutput?  // held here: its synthesiser's callbacks hold it weakly
        let prepared = PreparedSpeech(responseID: "resp_1", text: preparedText, voice: SpeechVoice(name: preparedVoice), synthesizer: voice, on: loop)
        loop.schedule(after: takenAfter) {
            guard let made = try? SpeechOutput(location: ContentLocation(responseID: "resp_1", itemID: "item_1", outputIndex: 0),
                                                 voice: SpeechVoice(name: "marin"), format: .pcm16, synthesizer: voice, pool: pool, loop: loop,
                                                 send: { _ in }, report: { event in
                                                     if case .spoken(_, let ms) = event { audioMs = ms }
                                                     if case .finished = event { loop.stop() }
                                                 })
            else { return loop.stop() }
            output = made
            made.prepared = prepared
            made.add(first + " The second sentence is here.")
            made.end()
        }
        loop.schedule(after: 10) { loop.stop() }
        loop.run()
        #expect(output != nil)
        return (voice.asked.withLock { $0 }, voice.cancelled.withLock { $0 }, audioMs)
    }

    @Test(arguments: [0.0, 0.02, 0.2])
    func theSameFirstSentenceIsNotAskedForTwiceAndLosesNoAudio(takenAfter: Double) throws {
        // Taken before any audio, between its two pieces, and after it finished.
        let (asked, cancelled, audioMs) = try speak(first: "Eighty four is the answer.", preparedText: "Eighty four is the answer.", takenAfter: takenAfter)
        #expect(asked == ["Eighty four is the answer.", "The second sentence is here."])
        #expect(cancelled.isEmpty)
        // Two sentences of two 100 ms pieces each.
        #expect(audioMs == 400)
    }

    @Test func anotherFirstSentenceOrVoiceCancelsItAndAsksAfresh() throws {
        let other = try speak(first: "Ninety is the answer.", preparedText: "Eighty four is the answer.", takenAfter: 0.01)
        #expect(other.asked == ["Eighty four is the answer.", "Ninety is the answer.", "The second sentence is here."])
        #expect(other.cancelled == ["Eighty four is the answer."])
        #expect(other.audioMs == 400)
        let voice = try speak(first: "Eighty four is the answer.", preparedText: "Eighty four is the answer.", preparedVoice: "cedar", takenAfter: 0.01)
        #expect(voice.asked == ["Eighty four is the answer.", "Eighty four is the answer.", "The second sentence is here."])
        #expect(voice.cancelled == ["Eighty four is the answer."])
    }

    @Test func firstPieceIsWhatTheOutputWouldSpeakFirst() {
        #expect(SpokenSentences.firstPiece(of: "Sure, I can do that, for", complete: false) == "Sure, I can do that,")
        #expect(SpokenSentences.firstPiece(of: "Yes, it is. More", complete: false) == "Yes, it is.")
        #expect(SpokenSentences.firstPiece(of: "Eighty four", complete: false) == nil)
        #expect(SpokenSentences.firstPiece(of: " Eighty four ", complete: true) == "Eighty four")
        #expect(SpokenSentences.firstPiece(of: "", complete: true) == nil)
    }
}
