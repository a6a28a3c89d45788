import JSON
@testable import Models
import Testing
import Session
import SessionEngine

/// Function calling through the engine: tools declared, the model's call streamed as a
/// `function_call` item, the client's output back into the conversation, and every bad input.
@Suite struct SessionEngineToolTests {
    static let weather = #"{"type":"function","name":"get_weather","description":"The weather in a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}"#

    func session(tools: String = "[\(weather)]", choice: String = #""auto""#) throws -> EngineHarness {
        var h = try EngineHarness.manual()
        _ = h.start()
        let updated = h.client(#"{"type":"session.update","session":{"tools":\#(tools),"tool_choice":\#(choice)}}"#)
        #expect(updated.types == ["session.updated"], "\(updated.events)")
        return h
    }

    @Test func sessionUpdateDeclaresToolsAndReportsThemInSessionUpdated() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        let updated = h.client(#"{"type":"session.update","session":{"tools":[\#(Self.weather)],"tool_choice":"required"}}"#)
        guard case .sessionUpdated(let info) = updated.events.first?.kind else { Issue.record("\(updated.types)"); return }
        #expect(info.configuration.tools?.tools.map(\.name) == ["get_weather"])
        #expect(info.configuration.toolChoice == .required)
        let json = try JSON(parsing: updated.events[0].json(dialect: .ga))
        let tool = json["session"]?["tools"]?.array?.first
        #expect(tool?["name"]?.string == "get_weather")
        #expect(tool?["parameters"]?["required"]?.array?.first?.string == "city")
        #expect(json["session"]?["tool_choice"]?.string == "required")
    }

    @Test func identicalToolSetsAreOneObjectAcrossSessions() throws {
        let a = try session(), b = try session()
        #expect(a.engine.configuration.tools === b.engine.configuration.tools)
    }

    @Test func aCallStreamsAsAFunctionCallItemAndEndsTheResponse() throws {
        var h = try session()
        _ = h.say("what is the weather in Paris")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        #expect(model.options.tools?.tools.map(\.name) == ["get_weather"])

        let started = h.engine.handle(.modelToolCallStarted(responseID: model.id, index: 0, callID: "call_1", name: "get_weather"))
        #expect(started.types == ["response.output_item.added", "conversation.item.created"])
        guard case .outputItemAdded(_, let index, let item) = started.events[0].kind else { return }
        #expect(index == 0 && item.function == .call(callID: "call_1", name: "get_weather", arguments: "") && item.status == .inProgress)

        let pieces = [#"{"city""#, #":"Paris"}"#].flatMap { h.engine.handle(.modelToolCallArguments(responseID: model.id, index: 0, delta: $0)) }
        #expect(pieces.types == ["response.function_call_arguments.delta", "response.function_call_arguments.delta"])
        let delta = try JSON(parsing: pieces.events[0].json(dialect: .ga))
        #expect(delta["call_id"]?.string == "call_1" && delta["output_index"]?.int == 0 && delta["delta"]?.string == #"{"city""#)

        let done = h.finish(model.id, reason: .toolCalls)
        #expect(done.types == ["response.function_call_arguments.done", "response.output_item.done", "response.done"])
        guard case .functionCallArgumentsDone(_, let name, let arguments) = done.events[0].kind,
              case .responseDone(let response) = done.events[2].kind else { return }
        #expect(name == "get_weather" && arguments == #"{"city":"Paris"}"#)
        #expect(response.status == .completed)
        #expect(response.output.map(\.function) == [.call(callID: "call_1", name: "get_weather", arguments: #"{"city":"Paris"}"#)])
        #expect(h.engine.history.last?.toolCalls == [ToolCall(id: "call_1", name: "get_weather", arguments: #"{"city":"Paris"}"#)])
    }

    @Test func theOutputAnswersTheCallAndTheNextResponseSeesBoth() throws {
        var h = try session()
        _ = h.say("weather in Paris?")
        let first = try h.client(#"{"type":"response.create"}"#).model()
        _ = h.engine.handle(.modelToolCallStarted(responseID: first.id, index: 0, callID: "call_9", name: "get_weather"))
        _ = h.engine.handle(.modelToolCallArguments(responseID: first.id, index: 0, delta: #"{"city":"Paris"}"#))
        _ = h.finish(first.id, reason: .toolCalls)

        let output = h.client(#"{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"call_9","output":"{\"temperature\":21}"}}"#)
        #expect(output.types == ["conversation.item.created"])
        guard case .conversationItemCreated(let item, _) = output.events[0].kind else { return }
        #expect(item.function == .output(callID: "call_9", output: #"{"temperature":21}"#))

        let second = try h.client(#"{"type":"response.create"}"#).model()
        #expect(second.messages.suffix(3).map(\.role) == [.user, .assistant, .tool])
        #expect(second.messages.last == ChatMessage(role: .tool, text: #"{"temperature":21}"#, toolCallID: "call_9"))
        #expect(second.messages[second.messages.count - 2].toolCalls.first?.id == "call_9")
    }

    @Test func aReplyMaySpeakThenCallInOneResponseAndParallelCallsKeepTheirPlaces() throws {
        var h = try session(tools: "[\(Self.weather),{\"type\":\"function\",\"name\":\"get_time\"}]")
        _ = h.say("let me know the weather and the time")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        _ = h.delta(model.id, "Let me check.")
        _ = h.engine.handle(.modelToolCallStarted(responseID: model.id, index: 0, callID: "a", name: "get_weather"))
        _ = h.engine.handle(.modelToolCallStarted(responseID: model.id, index: 1, callID: "b", name: "get_time"))
        _ = h.engine.handle(.modelToolCallArguments(responseID: model.id, index: 1, delta: "{}"))
        _ = h.engine.handle(.modelToolCallArguments(responseID: model.id, index: 0, delta: #"{"city":"Oslo"}"#))
        let done = h.finish(model.id, reason: .toolCalls)
        guard case .responseDone(let response) = done.events.last?.kind else { Issue.record("\(done.types)"); return }
        #expect(response.output.count == 3)
        #expect(response.output[0].content == [.outputText("Let me check.")])
        #expect(response.output[1].function == .call(callID: "a", name: "get_weather", arguments: #"{"city":"Oslo"}"#))
        #expect(response.output[2].function == .call(callID: "b", name: "get_time", arguments: "{}"))
    }

    @Test func malformedArgumentsFailTheResponseWithTheReason() throws {
        var h = try session()
        _ = h.say("weather?")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        _ = h.engine.handle(.modelToolCallStarted(responseID: model.id, index: 0, callID: "c", name: "get_weather"))
        _ = h.engine.handle(.modelToolCallArguments(responseID: model.id, index: 0, delta: #"{"city": Par"#))
        let done = h.finish(model.id, reason: .toolCalls)
        #expect(done.types.contains("error") && done.types.last == "response.done")
        guard case .responseDone(let response) = done.events.last?.kind else { return }
        #expect(response.status == .failed)
        guard case .error(let error) = done.events.first(where: { $0.type(in: .ga) == "error" })?.kind else { return }
        #expect(error.code == "invalid_tool_call" && error.message.contains("get_weather"))
        // The session goes on.
        #expect(h.say("hello").types == ["conversation.item.created"])
    }

    @Test func aCallToAnUndeclaredFunctionFailsTheResponse() throws {
        var h = try session()
        _ = h.say("delete everything")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        let actions = h.engine.handle(.modelToolCallStarted(responseID: model.id, index: 0, callID: "x", name: "rm_rf"))
        #expect(actions.types == ["cancelModel", "error", "response.done"])
    }

    @Test func anOutputForAnUnknownCallIsRefused() throws {
        var h = try session()
        let refused = h.client(#"{"type":"conversation.item.create","event_id":"e1","item":{"type":"function_call_output","call_id":"nope","output":"x"}}"#)
        #expect(refused.types == ["error"])
        guard case .error(let error) = refused.events[0].kind else { return }
        #expect(error.message.contains("nope") && error.eventID == "e1")
    }

    @Test func badToolDefinitionsAreRefusedNamingTheField() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        let tooMany = (0..<129).map { #"{"type":"function","name":"f\#($0)"}"# }.joined(separator: ",")
        let cases: [(String, String)] = [
            (#"[{"type":"function"}]"#, "session.tools[0].name"),
            (#"[{"type":"function","name":"has space"}]"#, "session.tools[0].name"),
            (#"[{"type":"function","name":"f","parameters":"not a schema"}]"#, "session.tools[0].parameters"),
            (#"[{"type":"function","name":"f","parameters":{"type":"string"}}]"#, "session.tools[0].parameters"),
            (#"[{"type":"function","name":"f"},{"type":"function","name":"f"}]"#, "session.tools[1].name"),
            (#"[{"type":"mcp","server_label":"x"}]"#, "session.tools[0].server_url"),
            (#"[{"type":"web_search"}]"#, "session.tools[0].type"),
            ("[\(tooMany)]", "session.tools"),
            ("[3]", "session.tools[0]"),
        ]
        for (tools, param) in cases {
            let refused = h.client(#"{"type":"session.update","session":{"tools":\#(tools)}}"#)
            guard case .error(let error) = refused.events.first?.kind else { Issue.record("\(tools): \(refused.types)"); continue }
            #expect(error.param == param, "\(tools): \(error)")
        }
        #expect(h.engine.configuration.tools == nil)
        let named = h.client(#"{"type":"session.update","session":{"tool_choice":{"type":"function","name":"missing"}}}"#)
        #expect(named.types == ["error"])
    }

    @Test func responseCreateMayBringItsOwnTools() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        _ = h.say("time?")
        let model = try h.client(#"{"type":"response.create","response":{"tools":[{"type":"function","name":"get_time"}],"tool_choice":"required"}}"#).model()
        #expect(model.options.tools?.tools.map(\.name) == ["get_time"] && model.options.toolChoice == .required)
        #expect(h.engine.configuration.tools == nil)
    }

    @Test func previousItemIDPlacesTheItem() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        let first = h.client(#"{"type":"conversation.item.create","item":{"id":"one","type":"message","role":"user","content":[{"type":"input_text","text":"1"}]}}"#)
        #expect(first.types == ["conversation.item.created"])
        _ = h.client(#"{"type":"conversation.item.create","item":{"id":"three","type":"message","role":"user","content":[{"type":"input_text","text":"3"}]}}"#)
        let two = h.client(#"{"type":"conversation.item.create","previous_item_id":"one","item":{"id":"two","type":"message","role":"user","content":[{"type":"input_text","text":"2"}]}}"#)
        guard case .conversationItemCreated(_, let previous) = two.events.first?.kind else { Issue.record("\(two.types)"); return }
        #expect(previous == "one")
        #expect(h.engine.history.map(\.text) == ["1", "2", "3"])
        let root = h.client(#"{"type":"conversation.item.create","previous_item_id":"root","item":{"type":"message","role":"system","content":[{"type":"input_text","text":"0"}]}}"#)
        #expect(root.types == ["conversation.item.created"])
        #expect(h.engine.history.map(\.text) == ["0", "1", "2", "3"])
        #expect(h.client(#"{"type":"conversation.item.create","previous_item_id":"ghost","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}}"#).types == ["error"])
    }
}

/// `conversation.item.retrieve`, `.delete` and `.truncate`: what the OpenAI Agents SDK sends after
/// every transcription and on every barge-in.
@Suite struct SessionEngineItemTests {
    @Test func retrieveShowsTheItemAndDeleteRemovesIt() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        _ = h.client(#"{"type":"conversation.item.create","item":{"id":"q1","type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#)
        let retrieved = h.client(#"{"type":"conversation.item.retrieve","item_id":"q1"}"#)
        #expect(retrieved.types == ["conversation.item.retrieved"])
        guard case .conversationItemRetrieved(let item) = retrieved.events[0].kind else { return }
        #expect(item.id == "q1" && item.role == .user && item.content == [.inputText("hi")])

        #expect(h.client(#"{"type":"conversation.item.delete","item_id":"q1"}"#).types == ["conversation.item.deleted"])
        #expect(h.engine.history.isEmpty)
        let gone = h.client(#"{"type":"conversation.item.retrieve","event_id":"r2","item_id":"q1"}"#)
        #expect(gone.errors.first?.code == "item_not_found")
        #expect(h.client(#"{"type":"conversation.item.delete","item_id":"nope"}"#).errors.first?.code == "item_not_found")
    }

    @Test func aSpokenReplyIsCutToWhatWasHeard() throws {
        var (h, model) = try EngineHarness.spokenReply(to: "tell me")
        let added = h.delta(model.id, "one two three four five six seven eight")
        guard case .outputItemAdded(_, _, let item) = added.events[0].kind else { Issue.record("\(added.types)"); return }
        _ = h.finish(model.id)
        _ = h.engine.handle(.speechOutput(responseID: model.id, .spoken(itemID: item.id, audioMs: 4000)))
        _ = h.engine.handle(.speechOutput(responseID: model.id, .finished))

        let truncated = h.client(#"{"type":"conversation.item.truncate","item_id":"\#(item.id)","content_index":0,"audio_end_ms":2000}"#)
        #expect(truncated.types == ["conversation.item.truncated"])
        #expect(h.engine.history.last?.text == "one two three four")
        let retrieved = h.client(#"{"type":"conversation.item.retrieve","item_id":"\#(item.id)"}"#)
        guard case .conversationItemRetrieved(let cut) = retrieved.events.first?.kind else { return }
        #expect(cut.content == [.outputAudio(transcript: "one two three four")])
        #expect(h.client(#"{"type":"conversation.item.truncate","item_id":"\#(item.id)","content_index":0,"audio_end_ms":9000}"#).types == ["error"])
        #expect(h.client(#"{"type":"conversation.item.truncate","item_id":"\#(item.id)","content_index":1,"audio_end_ms":0}"#).types == ["error"])
    }

    @Test func textItemsHaveNoAudioToTruncate() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        _ = h.client(#"{"type":"conversation.item.create","item":{"id":"a1","type":"message","role":"assistant","content":[{"type":"text","text":"hello"}]}}"#)
        #expect(h.client(#"{"type":"conversation.item.truncate","item_id":"a1","content_index":0,"audio_end_ms":10}"#).errors.first?.code == "invalid_value")
    }
}

@Suite struct SessionEngineResponseDetailTests {
    @Test func metadataIsEchoedOnResponseCreatedAndDone() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        _ = h.say("hi")
        let started = h.client(#"{"type":"response.create","response":{"metadata":{"topic":"greeting"}}}"#)
        guard case .responseCreated(let created) = started.events.first?.kind else { Issue.record("\(started.types)"); return }
        #expect(created.metadata?["topic"]?.string == "greeting")
        let model = try started.model()
        _ = h.delta(model.id, "hello")
        guard case .responseDone(let done) = h.finish(model.id).events.last?.kind else { return }
        #expect(done.metadata?["topic"]?.string == "greeting")
        let json = try JSON(parsing: started.events[0].json(dialect: .ga))
        #expect(json["response"]?["metadata"]?["topic"]?.string == "greeting")
        let tooMany = (0..<17).map { "\"k\($0)\":\"v\"" }.joined(separator: ",")
        #expect(h.client(#"{"type":"response.create","response":{"metadata":{\#(tooMany)}}}"#).types == ["error"])
    }

    @Test func aCancelledSpokenReplyStillEndsItsAudio() throws {
        var (h, model) = try EngineHarness.spokenReply(to: "tell me")
        _ = h.delta(model.id, "one two three")
        let cancelled = h.client(#"{"type":"response.cancel"}"#)
        #expect(cancelled.types.contains("response.output_audio.done"))
        #expect(cancelled.types.firstIndex(of: "response.output_audio.done")! < cancelled.types.firstIndex(of: "response.done")!)
    }
}

@Suite struct SessionEngineIdleTimeoutTests {
    @Test func silenceAfterAResponsePastIdleTimeoutIsCommittedAndAnswered() throws {
        var h = try EngineHarness()
        _ = h.start()
        #expect(h.client(#"{"type":"session.update","session":{"turn_detection":{"type":"server_vad","idle_timeout_ms":5000}}}"#).types == ["session.updated"])
        _ = h.say("hello")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        _ = h.delta(model.id, "hi there")
        _ = h.finish(model.id)
        let frame = [Int16](repeating: 0, count: 320)  // 20 ms of silence at 16 kHz
        let quiet = (0..<240).flatMap { _ in h.audio(frame) }  // 4.8 s
        #expect(!quiet.types.contains("input_audio_buffer.timeout_triggered"))
        let timeout = (0..<20).flatMap { _ in h.audio(frame) }  // past 5 s
        #expect(timeout.types.prefix(4) == ["input_audio_buffer.timeout_triggered", "input_audio_buffer.committed", "conversation.item.created", "response.created"])
        guard case .inputAudioTimeoutTriggered(let start, let end, let itemID) = timeout.events.first?.kind else { return }
        #expect(end - start >= 5000)
        guard case .inputAudioCommitted(let committed, _) = timeout.events[1].kind else { return }
        #expect(committed == itemID)
        // Once: not again until the next response has ended.
        let more = (0..<300).flatMap { _ in h.audio(frame) }
        #expect(!more.types.contains("input_audio_buffer.timeout_triggered"))
    }
}

@Suite struct SessionEngineOutOfBandTests {
    @Test func anOutOfBandResponseSeesItsOwnInputAndLeavesTheConversationAlone() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        _ = h.client(#"{"type":"conversation.item.create","item":{"id":"q1","type":"message","role":"user","content":[{"type":"input_text","text":"book a table"}]}}"#)
        let started = h.client(#"""
            {"type":"response.create","response":{"conversation":"none","metadata":{"purpose":"classify"},
             "input":[{"type":"item_reference","id":"q1"},{"type":"message","role":"user","content":[{"type":"input_text","text":"Is that a booking? yes or no"}]}]}}
            """#)
        let model = try started.model()
        #expect(model.messages.map(\.text) == ["book a table", "Is that a booking? yes or no"])
        guard case .responseCreated(let created) = started.events.first?.kind else { return }
        #expect(created.conversationID == nil && created.metadata?["purpose"]?.string == "classify")
        let streamed = h.delta(model.id, "yes")
        #expect(!streamed.types.contains("conversation.item.created"))
        let done = h.finish(model.id)
        guard case .responseDone(let response) = done.events.last?.kind else { Issue.record("\(done.types)"); return }
        #expect(response.output.first?.content == [.outputText("yes")] && response.conversationID == nil)
        #expect(h.engine.history.map(\.text) == ["book a table"])

        let empty = try h.client(#"{"type":"response.create","response":{"conversation":"none","input":[]}}"#).model()
        #expect(empty.messages.isEmpty)
        _ = h.finish(empty.id)
        let inBand = try h.client(#"{"type":"response.create"}"#).model()
        #expect(inBand.messages.map(\.text) == ["book a table"])
    }
}

/// GA announces items with `conversation.item.added` and `conversation.item.done`; the beta with
/// `conversation.item.created` only.
@Suite struct SessionEngineItemEventTests {
    @Test func gaAddsThenFinishesItemsAndTheBetaIsNotSentDone() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        let created = h.say("hi")
        let sent = created.compactMap { if case .send(let event) = $0 { event } else { nil } }
        #expect(sent.filter { $0.isSent(in: .ga) }.map { $0.type(in: .ga) } == ["conversation.item.added", "conversation.item.done"])
        #expect(sent.filter { $0.isSent(in: .beta) }.map { $0.type(in: .beta) } == ["conversation.item.created"])
        let model = try h.client(#"{"type":"response.create"}"#).model()
        _ = h.delta(model.id, "hello")
        let done = h.finish(model.id)
        #expect(done.itemsDone.map(\.status) == [.completed])
        #expect(done.itemsDone.first?.content == [.outputText("hello")])
    }
}

@Suite struct SessionEngineOutputAudioClearTests {
    @Test func clearCutsOffASpokenReplyAndSaysSo() throws {
        var (h, model) = try EngineHarness.spokenReply(to: "tell me")
        _ = h.delta(model.id, "one two three")
        let cleared = h.client(#"{"type":"output_audio_buffer.clear"}"#)
        #expect(cleared.types.contains("cancelModel") && cleared.types.contains("speak.stop"))
        #expect(cleared.types.last == "output_audio_buffer.cleared")
        guard case .outputAudioBufferCleared(let id) = cleared.events.last?.kind else { return }
        #expect(id == model.id)
        // With nothing playing it is simply acknowledged, naming the last response.
        #expect(h.client(#"{"type":"output_audio_buffer.clear"}"#).types == ["output_audio_buffer.cleared"])
    }
}

extension EngineHarness {
    /// A manual-turn session whose replies are spoken, asked `question`, its response started.
    static func spokenReply(to question: String) throws -> (EngineHarness, (id: String, messages: [ChatMessage], options: ModelOptions)) {
        var options = SessionEngine.Options(synthesizes: true)
        options.configuration.turnDetection = nil
        options.configuration.outputModalities = .audio
        var h = try EngineHarness(options: options)
        _ = h.start()
        _ = h.say(question)
        let model = try h.client(#"{"type":"response.create"}"#).model()
        return (h, model)
    }
}
