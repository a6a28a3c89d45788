@testable import Models
@testable import Session
import JSON
import Testing
@testable import SessionEngine

/// The replay log as a value: numbering, acknowledgement, the bound, and what is out of range.
@Suite struct ResumeLogTests {
    @Test func eventsAreNumberedAndReplayedAfterTheLastOneReceived() throws {
        var log = ResumeLog()
        #expect(log.stamp(#"{"type":"a"}"#) == #"{"type":"a","seq":1}"#)
        _ = log.stamp(#"{"type":"b"}"#)
        _ = log.stamp(#"{"type":"c"}"#)
        #expect(try log.replay(after: 1).get() == [#"{"type":"b","seq":2}"#, #"{"type":"c","seq":3}"#])
        // Replaying acknowledges what the client had; the same number again still works.
        #expect(try log.replay(after: 1).get().count == 2)
        #expect(try log.replay(after: 3).get().isEmpty)
    }

    @Test func acknowledgedEventsAreLetGoAndCannotBeAskedForAgain() {
        var log = ResumeLog()
        for _ in 0..<5 { _ = log.stamp(#"{"type":"x"}"#) }
        log.acknowledge(4)
        #expect(log.entries.map(\.seq) == [5])
        #expect(log.replay(after: 2) == .failure(.outOfRange(lastSeq: 5, oldest: 4)))
        #expect(log.replay(after: 6) == .failure(.outOfRange(lastSeq: 5, oldest: 4)))
    }

    @Test func theLogIsBoundedAndSaysWhatItLost() throws {
        var log = ResumeLog(maxBytes: 100)
        for _ in 0..<20 { _ = log.stamp(#"{"type":"response.output_text.delta"}"#) }
        #expect(log.bytes <= 100 && log.entries.last?.seq == 20)
        let oldest = log.entries.first!.seq
        #expect(log.replay(after: oldest - 2) == .failure(.outOfRange(lastSeq: 20, oldest: oldest - 1)))
        #expect(try log.replay(after: oldest - 1).get().count == log.entries.count)
    }

    @Test func aRestoredLogTakesAnyNumberUpToTheLastAndReplaysWhatWasKept() throws {
        var log = ResumeLog(restoring: [.init(seq: 7, text: "d7"), .init(seq: 3, text: "d3")], lastSeq: 9)
        #expect(try log.replay(after: 5).get() == ["d7"])
        #expect(log.lastSeq == 9)
        #expect(log.stamp(#"{"type":"n"}"#) == #"{"type":"n","seq":10}"#)
    }

    @Test func tokensAreUnguessableAndOnlyTheirHashIsKept() {
        let a = ResumeToken.make(), b = ResumeToken.make()
        #expect(a != b && ResumeToken.isWellFormed(a.value) && a.hash.utf8.count == 64 && !a.hash.contains(a.value))
        #expect(!ResumeToken.isWellFormed("rt_short") && !ResumeToken.isWellFormed("rt_" + String(repeating: "!", count: 24)))
    }
}

/// What the store keeps of a session comes back as it was.
@Suite struct RestoredSessionTests {
    @Test func settingsAsSessionUpdatedShowsThemApplyBackWhole() throws {
        var configuration = SessionConfiguration()
        let update = try SessionUpdate.parse(EventFields(try JSON(parsing: #"{"instructions":"Be brief.","voice":"alloy","output_modalities":["text"]}"#), path: "session"))
        try configuration.apply(update, allowsOpus: false)
        let shown = SessionInfo(id: "sess_1", model: "m", configuration: configuration).json(dialect: .ga)
        var restored = SessionConfiguration()
        try restored.apply(try SessionUpdate.parse(EventFields(shown, path: "session")), allowsOpus: false)
        #expect(restored == configuration)
    }

    @Test func storedItemsBecomeTheModelsMessagesAgain() throws {
        let user = ConversationItem(id: "item_1", role: .user, status: .completed, content: [.inputAudio(transcript: "what time is it")])
        let reply = ConversationItem(id: "item_2", role: .assistant, status: .completed, content: [.outputText("noon")])
        let call = ConversationItem(id: "item_3", role: .assistant, status: .completed, content: [], function: .call(callID: "c1", name: "clock", arguments: "{}"))
        let output = ConversationItem(id: "item_4", role: .tool, status: .completed, content: [], function: .output(callID: "c1", output: "12:00"))
        let entries = [user, reply, call, output].compactMap { ChatMessage.restoring($0.json(dialect: .ga).description) }
        #expect(entries.map(\.id) == ["item_1", "item_2", "item_3", "item_4"])
        #expect(entries[0].message == ChatMessage(role: .user, text: "what time is it") && entries[0].audio)
        #expect(entries[1].message.text == "noon" && entries[2].message.toolCalls.first?.name == "clock")
        #expect(entries[3].message.role == .tool && entries[3].message.toolCallID == "c1")
        #expect(ChatMessage.restoring("") == nil && ChatMessage.restoring("{not json") == nil)
    }
}
