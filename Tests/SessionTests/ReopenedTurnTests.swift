import Models
@testable import Session
import Testing
@testable import SessionEngine

/// A turn that goes on after it ended, before its reply was heard: the reply is withdrawn and the
/// two halves become one user item (docs/protocol.md, "A turn that reopens").
@Suite struct ReopenedTurnTests {
    static let question = "What is twelve times seven?"

    private func itemIDs(_ actions: [SessionAction]) -> [String] {
        actions.events.compactMap { if case .inputAudioCommitted(let itemID, _) = $0.kind { itemID } else { nil } }
    }

    private func deleted(_ actions: [SessionAction]) -> [String] {
        actions.events.compactMap { if case .conversationItemDeleted(let itemID) = $0.kind { itemID } else { nil } }
    }

    @Test func speechBeforeTheReplyIsHeardWithdrawsItAndTheTurnGoesOnAsOneItem() throws {
        var h = try EngineHarness()
        _ = h.start()
        let clip = try SpeechClip.make(Self.question)
        let first = h.audio(clip.chunks(ms: 20))
        let firstItem = try #require(itemIDs(first).first)
        let (reply, _, _) = try first.model()
        #expect(clip.samples.count / 16 - clip.speechEndMs + clip.speechStartMs < TurnTaking.reopenWithinMs, "the clip's quiet is too long for this test")
        // The user goes on before any of the reply was said.
        let again = h.audio(clip.chunks(ms: 20))
        #expect(again.types.prefix(4) == ["cancelModel", "response.done", "conversation.item.deleted", "input_audio_buffer.speech_started"], "\(again.types)")
        #expect(again.responseDone?.status == .cancelled)
        #expect(deleted(again) == [firstItem])
        #expect(again.facts.contains { if case .turnReopened(_, firstItem) = $0 { true } else { false } })
        // The second half ends the reopened turn: one item, holding both halves' audio.
        let secondItem = try #require(itemIDs(again).first)
        #expect(secondItem != firstItem)
        let model = try again.model()
        #expect(model.id != reply)
        #expect(model.messages.map(\.role) == [.user])
        let spoken = try #require(model.messages.first?.spokenMilliseconds)
        #expect(spoken >= 2 * (clip.speechEndMs - clip.speechStartMs), "\(spoken) ms")
    }

    @Test func aReplyWhoseAudioWentOutIsNotWithdrawn() throws {
        var h = try EngineHarness(options: {
            var options = SessionEngine.Options(transcribes: false, synthesizes: true)
            options.configuration.outputModalities = .audio
            return options
        }())
        _ = h.start()
        let clip = try SpeechClip.make(Self.question)
        let (reply, _, _) = try h.audio(clip.chunks(ms: 20)).model()
        _ = h.delta(reply, "Eighty four.")
        _ = h.engine.handle(.speechOutput(responseID: reply, .audible))
        let again = h.audio(clip.chunks(ms: 20))
        #expect(deleted(again).isEmpty, "\(again.types)")
        #expect(!again.facts.contains { if case .turnReopened = $0 { true } else { false } })
    }

    @Test func aTextReplyThatHasBegunIsNotWithdrawn() throws {
        var h = try EngineHarness()
        _ = h.start()
        let clip = try SpeechClip.make(Self.question)
        let (reply, _, _) = try h.audio(clip.chunks(ms: 20)).model()
        _ = h.delta(reply, "Eighty")
        let again = h.audio(clip.chunks(ms: 20))
        #expect(deleted(again).isEmpty, "\(again.types)")
    }
}

/// The decision alone, in `TurnTaking`.
@Suite struct TurnTakingReopenTests {
    private func ended(_ floor: inout TurnTaking) -> TurnTaking.Ended? {
        let turn = TurnTaking.Turn(itemID: "item_1", onsetMs: 1_300, audioStartMs: 1_000)
        _ = floor.speechStarted(turn, during: .none, interruptResponse: true, settings: .init(), expectsWords: false)
        guard case .step(.end(let ended))? = floor.speechStopped(atMs: 3_000, semantic: nil) else { return nil }
        return ended
    }

    @Test func speechSoonAfterWithTheReplyUnheardReopensWithTheEndedTurnsStart() throws {
        var floor = TurnTaking()
        _ = try #require(ended(&floor))
        let next = TurnTaking.Turn(itemID: "item_2", onsetMs: 4_000, audioStartMs: 3_700)
        let start = floor.speechStarted(next, during: .spoken, interruptResponse: true, settings: .init(), expectsWords: true, replyUnheard: true)
        #expect(start == .reopened(TurnTaking.Turn(itemID: "item_2", onsetMs: 1_300, audioStartMs: 1_000), withdrawn: "item_1"))
    }

    @Test func speechTooLateOrAfterTheReplyWasHeardIsANewTurn() throws {
        var late = TurnTaking()
        _ = try #require(ended(&late))
        let far = TurnTaking.Turn(itemID: "item_2", onsetMs: 6_000, audioStartMs: 5_800)
        guard case .began = late.speechStarted(far, during: .spoken, interruptResponse: true, settings: .init(), expectsWords: true, replyUnheard: true) else {
            Issue.record("reopened 2.8 s after the end")
            return
        }
        var heard = TurnTaking()
        _ = try #require(ended(&heard))
        let soon = TurnTaking.Turn(itemID: "item_2", onsetMs: 3_500, audioStartMs: 3_200)
        guard case .began(_, .pause?) = heard.speechStarted(soon, during: .spoken, interruptResponse: true, settings: .init(), expectsWords: true) else {
            Issue.record("a heard reply was not paused")
            return
        }
    }
}
