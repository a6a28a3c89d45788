import JSON
import Testing
import Server
import Session
import Loop
import SessionEngine

@Suite struct ClientEventTests {
    /// An event for the engine; a test failure if the text is an audio append.
    private func parse(_ text: String) throws -> ClientEvent {
        guard case .event(let event) = try ClientMessage.parse(text) else { throw HarnessFailure(description: "an audio append: \(text)") }
        return event
    }

    private func rejection(_ text: String) -> ProtocolError? {
        do {
            _ = try ClientMessage.parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func simpleEventsParseWithTheirEventID() throws {
        #expect(try parse(#"{"type":"input_audio_buffer.commit","event_id":"c1"}"#) == ClientEvent(eventID: "c1", .inputAudioCommit))
        #expect(try parse(#"{"type":"input_audio_buffer.clear"}"#) == ClientEvent(.inputAudioClear))
        #expect(try parse(#"{"type":"response.cancel"}"#) == ClientEvent(.responseCancel(responseID: nil)))
        #expect(try parse(#"{"type":"response.cancel","response_id":"resp_1"}"#) == ClientEvent(.responseCancel(responseID: "resp_1")))
    }

    /// The bytes stay bytes: what they are (pcm16, G.711) is the session's input format, which
    /// the connection applies (see SessionUpdateTests and SessionEngineAudioTests).
    @Test func appendDecodesTheBase64ToBytes() throws {
        let bytes: [UInt8] = [0x01, 0x00, 0xFE, 0xFF, 0x34]
        #expect(try ClientMessage.parse(#"{"type":"input_audio_buffer.append","event_id":"a1","audio":"\#(Base64.encode(bytes))"}"#)
            == .audioAppend(eventID: "a1", bytes))
    }

    @Test func appendWithBadBase64NamesTheAudioField() {
        let error = rejection(#"{"type":"input_audio_buffer.append","event_id":"e9","audio":"not base64!"}"#)
        #expect(error?.code == .invalidValue)
        #expect(error?.param == "audio")
        #expect(error?.message.contains("'audio' is not valid base64") == true)
        #expect(error?.eventID == "e9")
    }

    @Test func userTextItemParses() throws {
        let event = try parse(#"{"type":"conversation.item.create","item":{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"Hi"},{"type":"input_text","text":"there"}]}}"#)
        #expect(event.kind == .conversationItemCreate(NewConversationItem(id: "msg_1", role: .user, text: "Hi\nthere")))
    }

    @Test func systemAndAssistantItemsParse() throws {
        let system = try parse(#"{"type":"conversation.item.create","item":{"type":"message","role":"system","content":[{"type":"input_text","text":"Be brief."}]}}"#)
        #expect(system.kind == .conversationItemCreate(NewConversationItem(role: .system, text: "Be brief.")))
        let assistant = try parse(#"{"type":"conversation.item.create","item":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Sure."}]}}"#)
        #expect(assistant.kind == .conversationItemCreate(NewConversationItem(role: .assistant, text: "Sure.")))
    }

    @Test func itemProblemsNameTheField() {
        let cases: [(String, ProtocolError.Code, String)] = [
            (#"{"type":"conversation.item.create"}"#, .missingField, "item"),
            (#"{"type":"conversation.item.create","item":{"type":"message","content":[]}}"#, .missingField, "item.role"),
            (#"{"type":"conversation.item.create","item":{"type":"message","role":"robot","content":[{"type":"input_text","text":"x"}]}}"#, .invalidValue, "item.role"),
            (#"{"type":"conversation.item.create","item":{"type":"message","role":"user"}}"#, .missingField, "item.content"),
            (#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[]}}"#, .invalidValue, "item.content"),
            (#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text"}]}}"#, .missingField, "item.content[0].text"),
            (#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_audio","audio":"AAAA"}]}}"#, .invalidValue, "item.content[0].type"),
            (#"{"type":"conversation.item.create","item":{"type":"mcp_call","role":"user","content":[]}}"#, .invalidValue, "item.type"),
            (#"{"type":"conversation.item.create","item":{"type":"function_call","role":"user","content":[]}}"#, .missingField, "item.call_id"),
            (#"{"type":"conversation.item.create","item":{"type":"function_call_output","output":"x"}}"#, .missingField, "item.call_id"),
            (#"{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"c"}}"#, .missingField, "item.output"),
            (#"{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"c","output":"\#(String(repeating: "x", count: 32 * 1024 + 1))"}}"#, .invalidValue, "item.output"),
            (#"{"type":"conversation.item.create","item":{"id":"\#(String(repeating: "x", count: 33))","role":"user","content":[]}}"#, .invalidValue, "item.id"),
        ]
        for (text, code, param) in cases {
            let error = rejection(text)
            #expect(error?.code == code, "\(text)")
            #expect(error?.param == param, "\(text)")
            #expect(error?.message.contains("'\(param)'") == true, "\(text): \(String(describing: error))")
        }
    }

    @Test func responseCreateReadsOverridesInBothDialects() throws {
        #expect(try parse(#"{"type":"response.create"}"#) == ClientEvent(.responseCreate(ResponseOverrides())))
        let ga = try parse(#"{"type":"response.create","response":{"instructions":"Shout.","output_modalities":["audio"],"max_output_tokens":50}}"#)
        #expect(ga.kind == .responseCreate(ResponseOverrides(instructions: "Shout.", outputModalities: .audio, maxOutputTokens: .limited(50))))
        let beta = try parse(#"{"type":"response.create","response":{"modalities":["text"],"max_response_output_tokens":"inf"}}"#)
        #expect(beta.kind == .responseCreate(ResponseOverrides(outputModalities: .text, maxOutputTokens: .unlimited)))
    }

    @Test func invalidJSONIsReportedAsSuch() {
        let error = rejection(#"{"type": "response.create""#)
        #expect(error?.code == .invalidJSON)
        #expect(error?.message.contains("not valid JSON") == true)
        #expect(rejection("[1,2]")?.message == "an event must be a JSON object")
    }

    @Test func unknownAndUnsupportedTypesAreDistinguished() {
        let unknown = rejection(#"{"type":"respnse.create","event_id":"x"}"#)
        #expect(unknown?.code == .unknownEvent)
        #expect(unknown?.message == "unknown event type 'respnse.create'")
        #expect(unknown?.eventID == "x")
        #expect(rejection(#"{"type":"transcription_session.update"}"#)?.code == .missingField)
        #expect(rejection(#"{"type":"conversation.item.delete"}"#)?.code == .missingField)
    }

    @Test func missingTypeIsAMissingField() {
        let error = rejection(#"{"event_id":"e1"}"#)
        #expect(error?.code == .missingField)
        #expect(error?.param == "type")
        #expect(error?.eventID == "e1")
    }

    @Test func wrongFieldTypesNameTheField() {
        #expect(rejection(#"{"type":42}"#)?.message == "'type' must be a string")
        #expect(rejection(#"{"type":"response.cancel","response_id":7}"#)?.param == "response_id")
    }
}
