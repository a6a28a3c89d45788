@testable import Models
import Testing
import Session

@Suite struct HistoryBudgetTests {
    private func item(_ role: String, _ text: String) -> String {
        #"{"type":"conversation.item.create","item":{"type":"message","role":"\#(role)","content":[{"type":"input_text","text":"\#(text)"}]}}"#
    }

    @Test func oldestNonSystemMessagesDropFirstPastTheMessageLimit() throws {
        var h = try EngineHarness(options: .init(maxHistoryMessages: 4))
        _ = h.client(item("system", "Rules."))
        for word in ["one", "two", "three", "four", "five", "six"] { _ = h.say(word) }
        #expect(h.engine.history.map(\.text) == ["Rules.", "four", "five", "six"])
    }

    @Test func oldestNonSystemMessagesDropFirstPastTheTextLimit() throws {
        var h = try EngineHarness(options: .init(maxHistoryTextBytes: 40))
        _ = h.client(item("system", "0123456789"))  // 10 bytes
        _ = h.say("aaaaaaaaaa")
        _ = h.say("bbbbbbbbbb")
        _ = h.say("cccccccccc")  // 40 bytes in all: within budget
        #expect(h.engine.history.count == 4)
        _ = h.say("d")
        #expect(h.engine.history.map(\.text) == ["0123456789", "bbbbbbbbbb", "cccccccccc", "d"])
    }

    @Test func theModelSeesTheTrimmedHistoryAfterTheInstructions() throws {
        var options = SessionEngine.Options(maxHistoryMessages: 2)
        options.configuration.instructions = "Be brief."
        var h = try EngineHarness(options: options)
        for word in ["one", "two", "three"] { _ = h.say(word) }
        let model = try h.client(#"{"type":"response.create"}"#).model()
        #expect(model.messages.map(\.text) == ["Be brief.", "two", "three"])
    }

    @Test func trimmingNeverLeavesAnAssistantMessageFirst() throws {
        var h = try EngineHarness(options: .init(maxHistoryMessages: 2))
        _ = h.say("question")
        let id = try h.respond()
        _ = h.delta(id, "answer")
        _ = h.finish(id)
        _ = h.say("follow-up")
        // [question, answer, follow-up] is over the limit: the question goes, and the answer that
        // would then open the conversation goes with it.
        #expect(h.engine.history == [ChatMessage(role: .user, text: "follow-up")])
    }

    @Test func systemMessagesGoOnlyWhenNothingElseIsLeft() throws {
        var h = try EngineHarness(options: .init(maxHistoryMessages: 2))
        _ = h.client(item("system", "A"))
        _ = h.client(item("system", "B"))
        _ = h.client(item("system", "C"))
        #expect(h.engine.history.map(\.text) == ["B", "C"])
    }

    @Test func aMessageLargerThanTheWholeBudgetIsCutToFitOnACharacterBoundary() throws {
        var h = try EngineHarness(options: .init(maxHistoryTextBytes: 10))
        _ = h.say("ééééééé")  // 14 bytes; 5 characters fit in 10
        #expect(h.engine.history.last?.text == "ééééé")
    }

    @Test func accountedBytesFollowTheHistory() throws {
        var h = try EngineHarness()
        #expect(h.engine.accountedBytes == 0)
        _ = h.say(String(repeating: "x", count: 1000))
        let one = h.engine.accountedBytes
        #expect(one >= 1000)
        _ = h.say(String(repeating: "y", count: 1000))
        #expect(h.engine.accountedBytes >= one + 1000)
    }
}
