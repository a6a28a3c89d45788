@testable import Models
import Testing
@testable import Session
@testable import SessionEngine

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

    // MARK: Truncation and the session's budget

    private func update(_ session: String) -> String { #"{"type":"session.update","session":\#(session)}"# }

    private static func dropped(_ actions: [SessionAction]) -> Int {
        actions.reduce(0) { if case .fact(.historyTruncated(let n)) = $1 { $0 + n } else { $0 } }
    }

    @Test func autoTruncationIsTheDefaultAndIsReported() throws {
        var h = try EngineHarness()
        let created = try #require(h.start().events.first)
        #expect(created.json(dialect: .ga).contains(#""truncation":"auto""#))
        // The extension is not shown until a session sets it.
        #expect(!created.json(dialect: .ga).contains("max_history_bytes"))
    }

    @Test func aSessionLowersItsBudgetAndIsToldWhatTheServerAllows() throws {
        var h = try EngineHarness(options: .init(maxHistoryTextBytes: 1_000))
        for word in ["aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc"] { _ = h.say(String(repeating: word, count: 10)) }  // 300 bytes
        let lowered = h.client(update(#"{"max_history_bytes":256}"#))
        #expect(lowered.errors.isEmpty, "\(lowered.errors)")
        #expect(lowered.events.last?.json(dialect: .ga).contains(#""max_history_bytes":256"#) == true)
        // The oldest went at once, and the metric hears of it.
        #expect(h.engine.history.map { $0.text.first } == ["b", "c"])
        #expect(Self.dropped(lowered) == 1)
        let refused = h.client(update(#"{"max_history_bytes":2000}"#))
        #expect(refused.errors.first?.code == "invalid_value")
        #expect(refused.errors.first?.message.contains("at most 1000") == true, "\(refused.errors)")
        #expect(h.client(update(#"{"max_history_bytes":10}"#)).errors.first?.code == "invalid_value")
    }

    @Test func retentionRatioTruncatesBelowTheBudgetSoItTruncatesSeldom() throws {
        var h = try EngineHarness(options: .init(maxHistoryTextBytes: 100))
        _ = h.client(update(#"{"truncation":{"type":"retention_ratio","retention_ratio":0.5}}"#))
        func text(_ n: Int) -> String { String("\(n)-xxxxxxxxxx".prefix(10)) }  // 10 bytes each
        for n in 0..<10 { _ = h.say(text(n)) }  // 100 in all: at the budget
        #expect(h.engine.history.count == 10)
        let over = h.say(text(10))
        // Past 100 bytes, down to 50 at most: six of eleven go at once...
        #expect(h.engine.history.map(\.text) == (6...10).map(text))
        #expect(Self.dropped(over) == 6)
        // ...and the next five fit without truncating again.
        for n in 11..<16 { #expect(Self.dropped(h.say(text(n))) == 0) }
    }

    @Test func disabledTruncationKeepsEverythingAndFailsTheResponseUntilTheClientMakesRoom() throws {
        var h = try EngineHarness(options: .init(maxHistoryMessages: 3))
        _ = h.client(update(#"{"truncation":"disabled"}"#))
        var ids: [String] = []
        for word in ["one", "two", "three", "four"] {
            let actions = h.say(word)
            #expect(Self.dropped(actions) == 0)
            ids += actions.itemsDone.map(\.id)
        }
        #expect(h.engine.history.map(\.text) == ["one", "two", "three", "four"])
        let refused = h.client(#"{"type":"response.create"}"#)
        #expect(refused.types == ["response.created", "error", "response.done"], "\(refused.types)")
        #expect(refused.errors.first?.code == "context_length_exceeded")
        #expect(refused.errors.first?.message.contains("4 items") == true, "\(refused.errors)")
        _ = h.client(#"{"type":"conversation.item.delete","item_id":"\#(ids[0])"}"#)
        #expect(h.client(#"{"type":"response.create"}"#).types.contains("startModel"))
    }

    @Test func disabledTruncationStillBoundsMemoryAtTwiceTheBudget() throws {
        var h = try EngineHarness(options: .init(maxHistoryMessages: 3))
        _ = h.client(update(#"{"truncation":"disabled"}"#))
        for n in 0..<7 { _ = h.say("\(n)") }
        #expect(h.engine.history.map(\.text) == ["1", "2", "3", "4", "5", "6"])
    }

    @Test func aKnownModelsContextBoundsTheHistoryInTokensLessTheInstructions() throws {
        // gpt-realtime reads 28,224 tokens of context: about 113 KB of text at four bytes a token.
        var options = SessionEngine.Options(model: "gpt-realtime", maxHistoryTextBytes: 1 << 20)
        options.configuration.instructions = String(repeating: "i", count: 40_000)  // 10,000 tokens
        var h = try EngineHarness(options: options)
        let block = String(repeating: "w", count: 10_000)  // 2,504 tokens a message
        for _ in 0..<10 { _ = h.say(block) }
        // 18,224 tokens remain after the instructions: seven messages (17,528), not eight.
        #expect(h.engine.history.count == 7)
        // A session's own post_instructions limit lowers it further.
        let lowered = h.client(update(#"{"truncation":{"type":"retention_ratio","retention_ratio":1,"token_limits":{"post_instructions":6000}}}"#))
        #expect(h.engine.history.count == 2)
        #expect(Self.dropped(lowered) == 5)
        #expect(lowered.events.last?.json(dialect: .ga).contains(#""token_limits":{"post_instructions":6000}"#) == true)
    }

    @Test func truncationSettingsAreChecked() throws {
        var h = try EngineHarness()
        for bad in [#"{"truncation":"sometimes"}"#, #"{"truncation":{"type":"retention_ratio","retention_ratio":1.5}}"#,
                    #"{"truncation":{"type":"retention_ratio"}}"#, #"{"truncation":{"type":"other","retention_ratio":0.5}}"#] {
            let errors = h.client(update(bad)).errors
            #expect(errors.first?.code == "invalid_value" || errors.first?.code == "missing_field", "\(bad): \(errors)")
        }
    }

    /// Ids and texts share one buffer: they read back right through rewrites, deletions and the
    /// compactions these cause, and what it holds stays within twice the text.
    @Test func theSharedBufferReadsBackThroughRewritesAndCompactions() throws {
        var history = ConversationHistory(budget: .init(maxMessages: 64, maxBytes: 32 * 1024))
        var expected: [(id: String, text: String)] = []
        for n in 0..<200 {
            let id = "item_\(String(repeating: "0", count: 10))\(n)"
            let text = String(repeating: "word\(n % 10) ", count: 10 + n % 15)
            history.append(id: id, ChatMessage(role: n.isMultiple(of: 2) ? .user : .assistant, text: ""))
            history.setText(text, of: id)
            expected.append((id, text))
            if n % 7 == 3 {
                let deleted = history.delete(expected.remove(at: expected.count - 3).id)
                #expect(deleted)
            }
        }
        let kept = expected.suffix(history.count)
        #expect(history.messages.map(\.text) == kept.map(\.text))
        #expect((0..<history.count).map { history.id(at: $0) } == kept.map(\.id))
        #expect(history.entry(kept.first!.id)?.message.text == kept.first!.text)
        #expect(history.heapBytes <= 2 * history.textBytes, "\(history.heapBytes) bytes held for \(history.textBytes) of text")
    }
}
