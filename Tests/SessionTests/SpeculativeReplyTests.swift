import Testing
@testable import Models
@testable import Session
@testable import SpeechContracts
@testable import SessionEngine

/// Speculative replies (`turn_detection.speculative_response`): begun on the words so far while
/// the end-of-turn model weighs a silence, held unseen, used only when the turn ends with those
/// words. Scripted VAD, verdicts, transcripts and model output: no sockets, no models.
@Suite struct SpeculativeReplyTests {
    private func engine(speculates: Bool? = true, byDefault: Bool = false) -> SessionEngine {
        .semantic(createResponse: true, seed: 11) { options in
            options.transcribes = true
            options.speculatesByDefault = byDefault
            options.configuration.turnDetection?.speculativeResponse = speculates
        }
    }

    private func feed(_ engine: inout SessionEngine, silentMs: Int = 0, loudMs: Int = 0) -> [SessionAction] {
        engine.feed(silentMs: silentMs, loudMs: loudMs)
    }

    /// Speech, then the silence that asks the model: the turn's item id.
    private func speakAndPause(_ engine: inout SessionEngine) throws -> String {
        _ = feed(&engine, silentMs: 320)
        let actions = feed(&engine, loudMs: 640) + feed(&engine, silentMs: 260)
        for case .turnModel(.judge(let itemID)) in actions { return itemID }
        throw HarnessFailure(description: "the model was not asked; got \(actions.types)")
    }

    private func complete(_ engine: inout SessionEngine, _ itemID: String) -> [SessionAction] {
        engine.handle(.turnVerdict(itemID: itemID, .success(TurnVerdict(complete: true, probability: 0.97))))
    }

    /// Every text the client was sent, to show a speculative reply's words never reached it.
    private func sentText(_ actions: [SessionAction]) -> String {
        actions.events.map { "\($0.kind)" }.joined(separator: "\n")
    }

    @Test func aReplyBegunOnTheSameWordsBecomesTheTurnsResponse() throws {
        var engine = engine()
        let itemID = try speakAndPause(&engine)
        let partial = engine.handle(.transcription(itemID: itemID, .partial("what is twelve times seven")))
        let speculation = try partial.speculation()
        #expect(speculation.messages.last == ChatMessage(role: .user, text: "what is twelve times seven"))
        // Its words are held: nothing goes to the client, nothing is spoken.
        let held = engine.handle(.modelDelta(responseID: speculation.id, text: "Eighty-four."))
            + engine.handle(.modelFinished(responseID: speculation.id, usage: nil))
        #expect(held.events.isEmpty, "\(held.types)")
        let ended = complete(&engine, itemID)
        #expect(!ended.types.contains("response.created"), "the reply waits for the final words: \(ended.types)")
        // The final pass punctuates differently: the same words.
        let answered = engine.handle(.transcription(itemID: itemID, .final("What is twelve times seven?")))
        #expect(answered.speculationOutcomes == [.used])
        #expect(!answered.types.contains("startModel"), "no second call: \(answered.types)")
        let created = answered.events.compactMap { if case .responseCreated(let r) = $0.kind { r } else { nil } }
        #expect(created.first?.id == speculation.id)
        #expect(answered.responseDone?.status == .completed)
        #expect(sentText(answered).contains("Eighty-four."))
        // The transcript's completion comes before the response, as without speculation.
        let types = answered.types
        #expect(types.firstIndex(of: "conversation.item.input_audio_transcription.completed")! < types.firstIndex(of: "response.created")!)
    }

    @Test func speakingAgainCancelsItAndItsWordsAreNeverSent() throws {
        var engine = engine()
        let itemID = try speakAndPause(&engine)
        let speculation = try engine.handle(.transcription(itemID: itemID, .partial("I need a flight to"))).speculation()
        var everything = engine.handle(.modelDelta(responseID: speculation.id, text: "Where would you like to fly to?"))
        let resumed = feed(&engine, loudMs: 200)
        everything += resumed
        #expect(resumed.types.contains("cancelModel"))
        #expect(resumed.speculationOutcomes == [.cancelled])
        // Late output of the cancelled call changes nothing.
        everything += engine.handle(.modelDelta(responseID: speculation.id, text: " Anything else?"))
        everything += engine.handle(.modelFinished(responseID: speculation.id, usage: nil))
        // The rest of the sentence, a second pause, and the end of the turn.
        let secondPause = feed(&engine, silentMs: 0, loudMs: 440) + feed(&engine, silentMs: 260)
        // Asked again, but the words so far are the ones the user went on from: nothing to start yet.
        #expect(secondPause.types.contains("turn.judge") && !secondPause.types.contains("speculate"), "\(secondPause.types)")
        everything += secondPause
        everything += engine.handle(.transcription(itemID: itemID, .partial("I need a flight to Boston on Friday")))
        #expect(everything.types.filter { $0 == "speculate" }.count == 1)
        everything += complete(&engine, itemID)
        everything += engine.handle(.transcription(itemID: itemID, .final("I need a flight to Boston on Friday.")))
        #expect(!sentText(everything).contains("Where would you like to fly to?"))
        #expect(!sentText(everything).contains("Anything else?"))
        #expect(everything.speculationOutcomes == [.cancelled, .used])
    }

    @Test func finalWordsThatDifferStartTheReplyAgain() throws {
        var engine = engine()
        let itemID = try speakAndPause(&engine)
        let speculation = try engine.handle(.transcription(itemID: itemID, .partial("book a table for two"))).speculation()
        _ = engine.handle(.modelDelta(responseID: speculation.id, text: "For when?"))
        _ = complete(&engine, itemID)
        let answered = engine.handle(.transcription(itemID: itemID, .final("Book a table for two at eight.")))
        #expect(answered.speculationOutcomes == [.restarted])
        let call = try answered.model()
        #expect(call.id != speculation.id)
        #expect(call.messages.last?.text == "Book a table for two at eight.")
        #expect(answered.types.firstIndex(of: "cancelModel")! < answered.types.firstIndex(of: "startModel")!)
        #expect(!sentText(answered).contains("For when?"))
        // The late words of the dropped call are not the new reply's.
        #expect(engine.handle(.modelDelta(responseID: speculation.id, text: "Late.")).events.isEmpty)
    }

    @Test func newerWordsDuringTheSilenceRestartIt() throws {
        var engine = engine()
        let itemID = try speakAndPause(&engine)
        let first = try engine.handle(.transcription(itemID: itemID, .partial("cancel my"))).speculation()
        let newer = engine.handle(.transcription(itemID: itemID, .partial("cancel my subscription")))
        #expect(newer.speculationOutcomes == [.restarted])
        let second = try newer.speculation()
        #expect(second.id != first.id)
        // The same words again (a later partial of the same silence) start nothing.
        #expect(engine.handle(.transcription(itemID: itemID, .partial("Cancel my subscription."))).types == [])
    }

    @Test func aFailedSpeculationIsSilentAndTheTurnIsAnsweredAfresh() throws {
        var engine = engine()
        let itemID = try speakAndPause(&engine)
        let speculation = try engine.handle(.transcription(itemID: itemID, .partial("good morning"))).speculation()
        let failed = engine.handle(.modelFailed(responseID: speculation.id, code: "upstream_error", message: "502"))
        #expect(failed.events.isEmpty)
        #expect(failed.speculationOutcomes == [.failed])
        _ = complete(&engine, itemID)
        let answered = engine.handle(.transcription(itemID: itemID, .final("Good morning.")))
        #expect(try answered.model().id != speculation.id)
    }

    @Test func offUnlessTheSessionOrTheServerSaysSo() throws {
        for (session, server, expected) in [(nil as Bool?, false, false), (nil, true, true), (false, true, false), (true, false, true)] {
            var engine = engine(speculates: session, byDefault: server)
            let itemID = try speakAndPause(&engine)
            let partial = engine.handle(.transcription(itemID: itemID, .partial("hello there")))
            #expect(partial.types.contains("speculate") == expected, "session \(String(describing: session)), server \(server)")
        }
    }

    @Test func aTranscriptionSessionNeverSpeculates() throws {
        var engine = SessionEngine.semantic(createResponse: true, seed: 11) { options in
            options.transcribes = true
            options.speculatesByDefault = true
            options.configuration.type = .transcription
        }
        let itemID = try speakAndPause(&engine)
        let partial = engine.handle(.transcription(itemID: itemID, .partial("hello there")))
        #expect(!partial.types.contains("speculate"), "\(partial.types)")
    }

    @Test func clearingTheAudioCancelsIt() throws {
        var engine = engine()
        let itemID = try speakAndPause(&engine)
        _ = try engine.handle(.transcription(itemID: itemID, .partial("hello there"))).speculation()
        var harness = try EngineHarness()
        harness.engine = engine
        let cleared = harness.client(#"{"type":"input_audio_buffer.clear"}"#)
        #expect(cleared.speculationOutcomes == [.cancelled])
    }

    @Test func theSettingIsReportedOnlyOnceSet() throws {
        var harness = try EngineHarness()
        _ = harness.start()
        let plain = harness.client(#"{"type":"session.update","session":{"turn_detection":{"type":"semantic_vad"}}}"#)
        #expect(!sentText(plain).contains("speculative_response"))
        let set = harness.client(#"{"type":"session.update","session":{"turn_detection":{"type":"semantic_vad","speculative_response":true}}}"#)
        #expect(harness.engine.configuration.turnDetection?.speculativeResponse == true)
        #expect(set.errors.isEmpty)
        let bad = harness.client(#"{"type":"session.update","session":{"turn_detection":{"type":"semantic_vad","speculative_response":"yes"}}}"#)
        #expect(bad.errors.first?.param == "session.turn_detection.speculative_response")
    }

    @Test func theSameWordsButForCaseAndPunctuation() {
        let base = [ChatMessage(role: .system, text: "Be brief."), ChatMessage(role: .user, text: "what's the time in paris")]
        let reply = SpeculativeReply(responseID: "resp_1", itemID: "item_1", messages: base, maxHeldBytes: 1024)
        #expect(reply.answers([base[0], ChatMessage(role: .user, text: "What's the time in Paris?")]))
        #expect(!reply.answers([base[0], ChatMessage(role: .user, text: "What's the time in Paris now?")]))
        #expect(!reply.answers([ChatMessage(role: .system, text: "Be long."), base[1]]))
        #expect(!reply.answers([base[1]]))
    }

    @Test func aRunawaySpeculationIsDroppedNotHeldWithoutBound() throws {
        var reply = SpeculativeReply(responseID: "resp_1", itemID: "item_1", messages: [ChatMessage(role: .user, text: "hi")], maxHeldBytes: 10)
        let fits = reply.hold(.modelDelta(responseID: "resp_1", text: "12345"))
        let overflows = !reply.hold(.modelDelta(responseID: "resp_1", text: "678901"))
        #expect(fits && overflows)
        #expect(reply.held.count == 1)
        #expect(reply.tokens > 0)
    }
}
