@testable import Models
import Testing
import JSON
import Session
import SessionEngine

@Suite struct SessionEngineTextTests {
    @Test func startSendsSessionCreatedWithTheSessionsIDAndNothingElse() throws {
        var h = try EngineHarness(seed: 42)
        let actions = h.start()
        #expect(actions.types == ["session.created"])
        guard case .sessionCreated(let info) = actions.events[0].kind else { Issue.record("not session.created"); return }
        #expect(info.id == h.engine.sessionID && info.id.hasPrefix("sess_"))
        #expect(info.model == "parley-builtin")
        #expect(info.configuration == SessionConfiguration())
        #expect(h.engine.accountedBytes == 0)
    }

    @Test func textTurnStreamsEachDeltaAtOnceAndEndsWithResponseDone() throws {
        var options = SessionEngine.Options()
        options.configuration.instructions = "Be brief."
        var h = try EngineHarness(options: options)
        _ = h.start()

        let created = h.client(#"{"type":"conversation.item.create","event_id":"c1","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"What is 12 times 7?"}]}}"#)
        #expect(created.types == ["conversation.item.created"])
        guard case .conversationItemCreated(let userItem, let previous) = created.events[0].kind else { return }
        #expect(previous == nil)
        #expect(userItem.role == .user && userItem.status == .completed && userItem.content == [.inputText("What is 12 times 7?")])

        let started = h.client(#"{"type":"response.create"}"#)
        #expect(started.types == ["response.created", "startModel"])
        guard case .responseCreated(let pending) = started.events[0].kind else { Issue.record("\(started.types)"); return }
        let model = try started.model()
        #expect(pending.status == .inProgress && pending.output.isEmpty && pending.usage == nil)
        #expect(model.id == pending.id)
        #expect(model.messages == [ChatMessage(role: .system, text: "Be brief."), ChatMessage(role: .user, text: "What is 12 times 7?")])
        #expect(h.engine.activeResponseID == model.id)

        let first = h.delta(model.id, "12 times 7")
        #expect(first.types == ["response.output_item.added", "conversation.item.created", "response.content_part.added", "response.output_text.delta"])
        guard case .conversationItemCreated(let replyItem, let replyPrevious) = first.events[1].kind else { return }
        #expect(replyItem.role == .assistant && replyItem.status == .inProgress)
        #expect(replyPrevious == userItem.id)
        #expect(first.events[3].kind == .outputTextDelta(ContentLocation(responseID: model.id, itemID: replyItem.id), delta: "12 times 7"))

        let second = h.delta(model.id, " is 84.")
        #expect(second.types == ["response.output_text.delta"])
        #expect(second.events[0].kind == .outputTextDelta(ContentLocation(responseID: model.id, itemID: replyItem.id), delta: " is 84."))

        let done = h.finish(model.id, usage: Usage(inputTokens: 20, outputTokens: 5))
        #expect(done.types == ["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.done"])
        #expect(done.events[0].kind == .outputTextDone(ContentLocation(responseID: model.id, itemID: replyItem.id), text: "12 times 7 is 84."))
        let response = try #require(done.responseDone)
        #expect(response.status == .completed && response.statusDetails == nil)
        #expect(response.output == [ConversationItem(id: replyItem.id, role: .assistant, status: .completed, content: [.outputText("12 times 7 is 84.")])])
        #expect(response.usage == Usage(inputTokens: 20, outputTokens: 5))
        #expect(h.engine.activeResponseID == nil)
        #expect(h.engine.history == [ChatMessage(role: .user, text: "What is 12 times 7?"), ChatMessage(role: .assistant, text: "12 times 7 is 84.")])
    }

    @Test func usageIsEstimatedWhenTheModelReportsNone() throws {
        var h = try EngineHarness()
        _ = h.say("Hello there")  // 11 bytes: 3 tokens, plus 4 of framing
        let id = try h.respond()
        _ = h.delta(id, "Hi! How are you?")  // 16 bytes: 4 tokens
        #expect(h.finish(id).responseDone?.usage == Usage(inputTokens: 7, outputTokens: 4))
    }

    @Test func everyEventHasAFreshID() throws {
        var h = try EngineHarness()
        var actions = h.start()
        actions += h.say("one")
        let id = try h.respond()
        actions += h.delta(id, "a") + h.delta(id, "b") + h.finish(id)
        let ids = actions.events.map(\.eventID)
        #expect(ids.count == 11)
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.hasPrefix("event_") })
    }

    @Test func differentSeedsGiveDifferentIDs() throws {
        var a = try EngineHarness(seed: 1), b = try EngineHarness(seed: 2)
        #expect(a.start().events[0].eventID != b.start().events[0].eventID)
        #expect(a.engine.sessionID != b.engine.sessionID)
    }

    @Test func responseOverridesApplyToThatResponseOnly() throws {
        var options = SessionEngine.Options()
        options.configuration.instructions = "Session rules."
        var h = try EngineHarness(options: options)
        _ = h.say("hi")
        let overridden = h.client(#"{"type":"response.create","response":{"instructions":"Just this once.","max_output_tokens":12}}"#)
        let model = try overridden.model()
        #expect(model.messages.first == ChatMessage(role: .system, text: "Just this once."))
        #expect(model.options.maxOutputTokens == 12)
        _ = h.finish(model.id)
        let plain = try h.client(#"{"type":"response.create"}"#).model()
        #expect(plain.messages.first == ChatMessage(role: .system, text: "Session rules."))
        #expect(plain.options.maxOutputTokens == nil)
    }

    @Test func audioModalityStreamsTheReplyAsATranscript() throws {
        var h = try EngineHarness()
        #expect(h.client(#"{"type":"session.update","session":{"output_modalities":["audio"]}}"#).types == ["session.updated"])
        _ = h.say("hi")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        #expect(model.options.outputModalities == .audio)
        let delta = h.delta(model.id, "Hello")
        #expect(delta.types == ["response.output_item.added", "conversation.item.created", "response.content_part.added", "response.output_audio_transcript.delta"])
        #expect(delta.events.map { $0.type(in: .beta) }.last == "response.audio_transcript.delta")
        let done = h.finish(model.id)
        #expect(done.types == ["response.output_audio_transcript.done", "response.content_part.done", "response.output_item.done", "response.done"])
        #expect(done.responseDone?.output.first?.content == [.outputAudio(transcript: "Hello")])
    }

    @Test func aWholeTurnRendersInTheBetaDialectWithBetaNames() throws {
        var h = try EngineHarness()
        _ = h.say("hi")
        let id = try h.respond()
        let actions = h.delta(id, "Hello") + h.finish(id)
        let beta = actions.events.map { $0.type(in: .beta) }
        #expect(beta.contains("response.text.delta") && beta.contains("response.text.done"))
        #expect(!beta.contains("response.output_text.delta"))
        let deltaJSON = try JSON(parsing: actions.events[3].json(dialect: .beta))
        #expect(deltaJSON["type"] == .string("response.text.delta"))
        #expect(deltaJSON["delta"] == .string("Hello"))
    }

    @Test func createWhileAResponseIsActiveIsAnError() throws {
        var h = try EngineHarness()
        _ = h.say("hi")
        let id = try h.respond()
        let again = h.client(#"{"type":"response.create","event_id":"again"}"#)
        #expect(again.types == ["error"])
        #expect(again.errors.first?.code == "conversation_already_has_active_response")
        #expect(again.errors.first?.message.contains(id) == true)
        #expect(again.errors.first?.eventID == "again")
        #expect(h.engine.activeResponseID == id)
    }

    @Test func responseCancelStopsTheModelAndKeepsWhatWasDelivered() throws {
        var h = try EngineHarness()
        _ = h.say("Tell me a story")
        let id = try h.respond()
        _ = h.delta(id, "Once upon")
        let cancelled = h.client(#"{"type":"response.cancel"}"#)
        #expect(cancelled.types == ["cancelModel", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.done"])
        #expect(cancelled.first == .cancelModel(responseID: id))
        let response = try #require(cancelled.responseDone)
        #expect(response.status == .cancelled && response.statusDetails == .cancelled(reason: "client_cancelled"))
        #expect(response.output.first?.status == .incomplete)
        #expect(h.engine.history.last == ChatMessage(role: .assistant, text: "Once upon"))
        // The model's late output is ignored.
        #expect(h.delta(id, " a time").isEmpty)
        #expect(h.finish(id).isEmpty)
    }

    @Test func responseCancelBeforeAnyOutputHasNoItem() throws {
        var h = try EngineHarness()
        let id = try h.respond()
        let cancelled = h.client(#"{"type":"response.cancel","response_id":"\#(id)"}"#)
        #expect(cancelled.types == ["cancelModel", "response.done"])
        #expect(cancelled.responseDone?.output == [])
        #expect(h.engine.history.isEmpty)
    }

    @Test func responseCancelWithNothingInFlightIsAnError() throws {
        var h = try EngineHarness()
        let none = h.client(#"{"type":"response.cancel","event_id":"c9"}"#)
        #expect(none.types == ["error"])
        #expect(none.errors.first?.code == "response_cancel_not_active")
        #expect(none.errors.first?.eventID == "c9")
        let id = try h.respond()
        let wrong = h.client(#"{"type":"response.cancel","response_id":"resp_other"}"#)
        #expect(wrong.errors.first?.code == "response_cancel_not_active")
        #expect(wrong.errors.first?.message.contains("resp_other") == true)
        #expect(h.engine.activeResponseID == id)
    }

    @Test func modelFailureFailsTheResponseAndTheNextTurnWorks() throws {
        var h = try EngineHarness()
        _ = h.say("hi")
        let id = try h.respond()
        _ = h.delta(id, "Hel")
        let failed = h.engine.handle(.modelFailed(responseID: id, code: "upstream_unavailable", message: "connection refused"))
        #expect(failed.types == ["error", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.done"])
        let error = try #require(failed.errors.first)
        #expect(error.type == .server && error.code == "upstream_unavailable" && error.message == "connection refused")
        let response = try #require(failed.responseDone)
        #expect(response.status == .failed && response.statusDetails == .failed(error))
        #expect(h.engine.activeResponseID == nil)

        _ = h.say("again?")
        let next = try h.respond()
        #expect(next != id)
        _ = h.delta(next, "Hello!")
        #expect(h.finish(next).responseDone?.status == .completed)
        #expect(h.engine.history.map(\.text) == ["hi", "Hel", "again?", "Hello!"])
    }

    @Test func outputForAnUnknownResponseIsIgnored() throws {
        var h = try EngineHarness()
        #expect(h.delta("resp_nope", "x").isEmpty)
        #expect(h.finish("resp_nope").isEmpty)
        #expect(h.engine.handle(.modelFailed(responseID: "resp_nope", code: "c", message: "m")).isEmpty)
    }

    @Test func aRunawayReplyIsCutAtTheHistoryBudgetAndCountsOnlyWhatWasDelivered() throws {
        var h = try EngineHarness(options: .init(maxHistoryTextBytes: 100))
        let id = try h.respond()
        _ = h.delta(id, String(repeating: "a", count: 90))
        let over = h.delta(id, String(repeating: "b", count: 20))
        #expect(over.types == ["response.output_text.delta", "cancelModel", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.done"])
        // The delta that crossed the budget is cut to fit: the client sees what the history keeps.
        guard case .outputTextDelta(_, let delta) = over.events[0].kind else { Issue.record("\(over.types)"); return }
        #expect(delta == String(repeating: "b", count: 10))
        let response = try #require(over.responseDone)
        #expect(response.status == .incomplete && response.statusDetails == .incomplete(reason: "max_output_tokens"))
        #expect(response.maxOutputTokens == nil)  // "inf": the cap is the history's, reported the closest way the API has
        let delivered = String(repeating: "a", count: 90) + String(repeating: "b", count: 10)
        #expect(response.output.first?.content == [.outputText(delivered)])
        #expect(response.usage?.outputTokens == 25)
        #expect(h.engine.history.last?.text == delivered)
    }

    @Test func maxOutputTokensStopsTheReplyOnceTheEstimateReachesIt() throws {
        var h = try EngineHarness()
        _ = h.client(#"{"type":"session.update","session":{"max_output_tokens":2}}"#)
        _ = h.say("hi")
        let id = try h.respond()
        #expect(h.delta(id, "Hi").types.last == "response.output_text.delta")  // 1 token
        let reached = h.delta(id, " there")  // 8 bytes: 2 tokens
        #expect(reached.types == ["response.output_text.delta", "cancelModel", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.done"])
        #expect(reached[1] == .cancelModel(responseID: id))
        let response = try #require(reached.responseDone)
        #expect(response.status == .incomplete && response.statusDetails == .incomplete(reason: "max_output_tokens"))
        #expect(response.output.first?.status == .incomplete)
        #expect(response.usage?.outputTokens == 2)
        #expect(response.maxOutputTokens == 2)
        // The model's later output is not delivered.
        #expect(h.delta(id, ", friend").isEmpty)
        #expect(h.finish(id).isEmpty)
        #expect(h.engine.history.last == ChatMessage(role: .assistant, text: "Hi there"))
    }

    @Test func aDeltaCrossingMaxOutputTokensIsCutToTheLimit() throws {
        var h = try EngineHarness()
        _ = h.say("hi")
        let id = try h.client(#"{"type":"response.create","response":{"max_output_tokens":1}}"#).model().id
        let cut = h.delta(id, "Hello! I'm Parley's built-in agent.")
        #expect(cut.types.contains("cancelModel"))
        guard let delta = cut.events.compactMap({ if case .outputTextDelta(_, let d) = $0.kind { d } else { nil } }).first else {
            Issue.record("\(cut.types)"); return
        }
        #expect(delta == "Hell")
        #expect(cut.responseDone?.usage?.outputTokens == 1)
        #expect(cut.responseDone?.statusDetails == .incomplete(reason: "max_output_tokens"))
    }

    @Test func aModelThatStopsForLengthEndsTheResponseIncomplete() throws {
        var h = try EngineHarness()
        _ = h.say("Tell me a story")
        let id = try h.respond()
        _ = h.delta(id, "Once upon")
        let done = h.finish(id, usage: Usage(inputTokens: 12, outputTokens: 2), reason: .length)
        #expect(done.types == ["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.done"])
        let response = try #require(done.responseDone)
        #expect(response.status == .incomplete && response.statusDetails == .incomplete(reason: "max_output_tokens"))
        #expect(response.output.first?.status == .incomplete)
        #expect(response.usage == Usage(inputTokens: 12, outputTokens: 2))
    }

    @Test func completedCancelledAndFailedResponsesEstimateUsageAlike() throws {
        var usages: [Usage] = []
        for ending in ["completed", "cancelled", "failed"] {
            var h = try EngineHarness()
            _ = h.say("Hello there")  // 11 bytes: 3 tokens, plus 4 of framing
            let id = try h.respond()
            _ = h.delta(id, "Hi! How are you?")  // 16 bytes: 4 tokens
            let done = switch ending {
            case "completed": h.finish(id)
            case "cancelled": h.client(#"{"type":"response.cancel"}"#)
            default: h.engine.handle(.modelFailed(responseID: id, code: "upstream_error", message: "boom"))
            }
            usages.append(try #require(done.responseDone?.usage))
        }
        #expect(usages == Array(repeating: Usage(inputTokens: 7, outputTokens: 4), count: 3))
    }

    @Test func anItemAddedDuringAReplyFollowsTheReplyInHistoryAndPreviousItemID() throws {
        var h = try EngineHarness()
        guard case .conversationItemCreated(let question, _) = h.say("Tell me a story").events.first?.kind else { return }
        let id = try h.respond()
        let opened = h.delta(id, "Once")
        guard case .conversationItemCreated(let reply, let replyPrevious) = opened.events[1].kind else { Issue.record("\(opened.types)"); return }
        #expect(replyPrevious == question.id)
        guard case .conversationItemCreated(let aside, let asidePrevious) = h.say("make it short").events.first?.kind else { return }
        #expect(asidePrevious == reply.id)
        _ = h.delta(id, " upon a time.")
        _ = h.finish(id)
        #expect(h.engine.history == [ChatMessage(role: .user, text: "Tell me a story"), ChatMessage(role: .assistant, text: "Once upon a time."),
                                     ChatMessage(role: .user, text: "make it short")])
        #expect(try h.respond() != id)
        guard case .conversationItemCreated(_, let nextPrevious) = h.say("thanks").events.first?.kind else { return }
        #expect(nextPrevious == aside.id)
    }

    @Test func anItemAddedBeforeTheReplysFirstTextPrecedesTheReply() throws {
        var h = try EngineHarness()
        _ = h.say("Tell me a story")
        let id = try h.respond()
        guard case .conversationItemCreated(let aside, _) = h.say("make it short").events.first?.kind else { return }
        let opened = h.delta(id, "Once.")
        guard case .conversationItemCreated(_, let replyPrevious) = opened.events[1].kind else { Issue.record("\(opened.types)"); return }
        #expect(replyPrevious == aside.id)
        _ = h.finish(id)
        #expect(h.engine.history.map(\.text) == ["Tell me a story", "make it short", "Once."])
    }

    @Test func sessionUpdateAnswersWithTheWholeNewSession() throws {
        var h = try EngineHarness()
        let updated = h.client(#"{"type":"session.update","session":{"instructions":"Be kind.","audio":{"output":{"voice":"cedar"}}}}"#)
        #expect(updated.types == ["session.updated"])
        guard case .sessionUpdated(let info) = updated.events[0].kind else { return }
        #expect(info.configuration.instructions == "Be kind." && info.configuration.voice == "cedar")
        #expect(info.configuration.turnDetection == ServerVAD())
        #expect(h.engine.configuration == info.configuration)
    }
}
