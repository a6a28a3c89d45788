@testable import Models
import Testing
import JSON
import Session
import SessionEngine

@Suite struct ServerEventJSONTests {
    static let at = ContentLocation(responseID: "resp_1", itemID: "item_2")

    private func json(_ kind: ServerEvent.Kind, _ dialect: Dialect) throws -> JSON {
        try JSON(parsing: ServerEvent(eventID: "event_9", kind).json(dialect: dialect))
    }

    @Test(arguments: [
        (ServerEvent.Kind.outputTextDelta(ServerEventJSONTests.at, delta: "Hi"), "response.output_text.delta", "response.text.delta"),
        (.outputTextDone(ServerEventJSONTests.at, text: "Hi"), "response.output_text.done", "response.text.done"),
        (.outputAudioDelta(ServerEventJSONTests.at, audio: [0, 0, 0]), "response.output_audio.delta", "response.audio.delta"),
        (.outputAudioDone(ServerEventJSONTests.at), "response.output_audio.done", "response.audio.done"),
        (.outputAudioTranscriptDelta(ServerEventJSONTests.at, delta: "Hi"), "response.output_audio_transcript.delta", "response.audio_transcript.delta"),
        (.outputAudioTranscriptDone(ServerEventJSONTests.at, transcript: "Hi"), "response.output_audio_transcript.done", "response.audio_transcript.done"),
    ])
    func renamedEventsUseEachDialectsName(kind: ServerEvent.Kind, ga: String, beta: String) throws {
        #expect(try json(kind, .ga)["type"] == .string(ga))
        #expect(try json(kind, .beta)["type"] == .string(beta))
        for dialect in [Dialect.ga, .beta] {
            let event = try json(kind, dialect)
            #expect(event["event_id"] == .string("event_9"))
            #expect(event["response_id"] == .string("resp_1") && event["item_id"] == .string("item_2"))
            #expect(event["output_index"] == .int(0) && event["content_index"] == .int(0))
        }
    }

    @Test func deltaEventIsExactlyTheRealtimeShape() {
        let event = ServerEvent(eventID: "event_9", .outputTextDelta(Self.at, delta: "Hel\"lo"))
        #expect(event.json(dialect: .ga) == #"{"type":"response.output_text.delta","event_id":"event_9","response_id":"resp_1","item_id":"item_2","output_index":0,"content_index":0,"delta":"Hel\"lo"}"#)
    }

    @Test func otherEventNamesAreTheSameInBothDialects() {
        let kinds: [(ServerEvent.Kind, String)] = [
            (.speechStarted(audioStartMs: 1, itemID: "i"), "input_audio_buffer.speech_started"),
            (.speechStopped(audioEndMs: 1, itemID: "i"), "input_audio_buffer.speech_stopped"),
            (.inputAudioCommitted(itemID: "i", previousItemID: nil), "input_audio_buffer.committed"),
            (.inputAudioCleared, "input_audio_buffer.cleared"),
            (.error(EventError(type: .server, code: "c", message: "m")), "error"),
        ]
        for (kind, name) in kinds {
            #expect(ServerEvent(eventID: "e", kind).type(in: .ga) == name)
            #expect(ServerEvent(eventID: "e", kind).type(in: .beta) == name)
        }
    }

    @Test func audioFormatsFollowTheDialect() throws {
        var configuration = SessionConfiguration()
        configuration.outputAudioFormat = .opus
        let info = SessionInfo(id: "sess_1", model: "parley-builtin", configuration: configuration)
        let ga = try json(.sessionCreated(info), .ga)
        let session = ga["session"]
        #expect(session?["type"] == .string("realtime"))
        #expect(session?["object"] == .string("realtime.session"))
        #expect(session?["audio"]?["input"]?["format"] == .object([("type", .string("audio/pcm")), ("rate", .int(24_000))]))
        #expect(session?["audio"]?["output"]?["format"] == .object([("type", .string("audio/opus")), ("rate", .int(48_000))]))
        #expect(session?["audio"]?["output"]?["voice"] == .string("alloy"))
        #expect(session?["output_modalities"] == .array([.string("text")]))
        #expect(session?["max_output_tokens"] == .string("inf"))

        let beta = try json(.sessionCreated(info), .beta)["session"]
        #expect(beta?["input_audio_format"] == .string("pcm16"))
        #expect(beta?["output_audio_format"] == .string("opus"))
        #expect(beta?["modalities"] == .array([.string("text")]))
        #expect(beta?["max_response_output_tokens"] == .string("inf"))
        #expect(beta?["audio"] == nil)
    }

    @Test func turnDetectionIsReportedOrNull() throws {
        var configuration = SessionConfiguration()
        let vad = try json(.sessionUpdated(SessionInfo(id: "s", model: "m", configuration: configuration)), .ga)["session"]?["audio"]?["input"]?["turn_detection"]
        #expect(vad?["type"] == .string("server_vad"))
        #expect(vad?["threshold"] == .number(0.5))
        #expect(vad?["prefix_padding_ms"] == .int(300))
        #expect(vad?["silence_duration_ms"] == .int(500))
        configuration.turnDetection = nil
        #expect(try json(.sessionUpdated(SessionInfo(id: "s", model: "m", configuration: configuration)), .beta)["session"]?["turn_detection"] == .null)
    }

    @Test func audioModalityIsListedAsEachDialectExpects() throws {
        var configuration = SessionConfiguration()
        configuration.outputModalities = .audio
        let info = SessionInfo(id: "s", model: "m", configuration: configuration)
        #expect(try json(.sessionCreated(info), .ga)["session"]?["output_modalities"] == .array([.string("audio")]))
        #expect(try json(.sessionCreated(info), .beta)["session"]?["modalities"] == .array([.string("text"), .string("audio")]))
    }

    @Test func assistantContentPartsAreNamedPerDialect() throws {
        let item = ConversationItem(id: "item_2", role: .assistant, status: .completed, content: [.outputText("Hi"), .outputAudio(transcript: "Hi")])
        let ga = try json(.outputItemDone(responseID: "resp_1", outputIndex: 0, item: item), .ga)["item"]?["content"]?.array
        #expect(ga?.map { $0["type"] } == [.string("output_text"), .string("output_audio")])
        let beta = try json(.outputItemDone(responseID: "resp_1", outputIndex: 0, item: item), .beta)["item"]?["content"]?.array
        #expect(beta?.map { $0["type"] } == [.string("text"), .string("audio")])
    }

    @Test func userAudioItemHasANullTranscript() throws {
        let item = ConversationItem(id: "item_1", role: .user, status: .completed, content: [.inputAudio(transcript: nil)])
        let event = try json(.conversationItemCreated(item, previousItemID: nil), .ga)
        #expect(event["previous_item_id"] == .null)
        #expect(event["item"] == .object([
            ("id", .string("item_1")), ("object", .string("realtime.item")), ("type", .string("message")), ("status", .string("completed")),
            ("role", .string("user")), ("content", .array([.object([("type", .string("input_audio")), ("transcript", .null)])])),
        ]))
    }

    @Test func responseDoneCarriesStatusDetailsAndUsage() throws {
        let failure = EventError(type: .server, code: "upstream_timeout", message: "the model did not answer")
        let response = RealtimeResponse(id: "resp_1", conversationID: "conv_1", status: .failed, statusDetails: .failed(failure), output: [],
                                        usage: Usage(inputTokens: 10, outputTokens: 3), outputModalities: .text, voice: "alloy",
                                        outputAudioFormat: .pcm16, maxOutputTokens: nil)
        let done = try json(.responseDone(response), .ga)["response"]
        #expect(done?["object"] == .string("realtime.response"))
        #expect(done?["status"] == .string("failed"))
        #expect(done?["status_details"] == .object([("type", .string("failed")), ("error", .object([
            ("type", .string("server_error")), ("code", .string("upstream_timeout")), ("message", .string("the model did not answer"))]))]))
        #expect(done?["usage"]?["total_tokens"] == .int(13))
        #expect(done?["usage"]?["input_tokens"] == .int(10))
        #expect(done?["usage"]?["output_tokens"] == .int(3))

        var cancelled = response
        cancelled.status = .cancelled
        cancelled.statusDetails = .cancelled(reason: "turn_detected")
        #expect(try json(.responseDone(cancelled), .beta)["response"]?["status_details"] == .object([("type", .string("cancelled")), ("reason", .string("turn_detected"))]))
    }

    @Test func errorEventCarriesTheClientsEventID() {
        let error = EventError(type: .invalidRequest, code: "invalid_value", message: "'audio' is not valid base64", param: "audio", eventID: "client_7")
        #expect(ServerEvent(eventID: "event_9", .error(error)).json(dialect: .ga)
            == #"{"type":"error","event_id":"event_9","error":{"type":"invalid_request_error","code":"invalid_value","message":"'audio' is not valid base64","param":"audio","event_id":"client_7"}}"#)
    }

    @Test func betaHeaderSelectsTheBetaDialect() {
        #expect(Dialect(openAIBetaHeader: "realtime=v1") == .beta)
        #expect(Dialect(openAIBetaHeader: "assistants=v2, realtime=v1") == .beta)
        #expect(Dialect(openAIBetaHeader: nil) == .ga)
        #expect(Dialect(openAIBetaHeader: "assistants=v2") == .ga)
    }
}
