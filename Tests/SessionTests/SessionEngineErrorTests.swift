import JSON
import Testing
import Session
import Codec
import Loop
import SessionEngine

@Suite struct SessionEngineErrorTests {
    /// Each malformed event yields one `error` event whose message names the problem, and the
    /// session carries on.
    @Test(arguments: [
        (#"{"type":"response.create""#, "invalid_json", "not valid JSON", nil),
        (#"{"type":"response.explode","event_id":"e1"}"#, "unknown_event", "'response.explode'", "type"),
        (#"{"event_id":"e1"}"#, "missing_field", "'type'", "type"),
        (#"{"type":"input_audio_buffer.append","event_id":"e1"}"#, "missing_field", "'audio'", "audio"),
        (#"{"type":"input_audio_buffer.append","event_id":"e1","audio":"@@@@"}"#, "invalid_value", "'audio' is not valid base64", "audio"),
        (#"{"type":"conversation.item.create","event_id":"e1","item":{"type":"message","role":"user"}}"#, "missing_field", "'item.content'", "item.content"),
        (#"{"type":"session.update","event_id":"e1","session":{"turn_detection":{"type":"server_vad","threshold":7}}}"#,
         "invalid_value", "'session.turn_detection.threshold' must be a number from 0 to 1", "session.turn_detection.threshold"),
        (#"{"type":"session.update","event_id":"e1","session":{"audio":{"input":{"format":{"type":"audio/pcm","rate":8000}}}}}"#,
         "invalid_value", "'session.audio.input.format.rate' must be 24000", "session.audio.input.format.rate"),
        (#"{"type":"session.update","event_id":"e1","session":{"output_modalities":["smell"]}}"#, "invalid_value", "'session.output_modalities'", "session.output_modalities"),
    ] as [(String, String, String, String?)])
    func malformedEventsYieldAnErrorNamingTheProblem(text: String, code: String, mentions: String, param: String?) throws {
        var h = try EngineHarness()
        _ = h.start()
        let actions = h.client(text)
        #expect(actions.types == ["error"])
        let error = try #require(actions.errors.first)
        #expect(error.type == .invalidRequest)
        #expect(error.code == code)
        #expect(error.message.contains(mentions), "\(error.message)")
        #expect(error.param == param)
        if text.contains(#""event_id":"e1""#) { #expect(error.eventID == "e1") }
        // Still usable.
        #expect(h.say("hello").types == ["conversation.item.created"])
        #expect(h.engine.configuration == SessionConfiguration())
    }

    @Test func opusIsRefusedOnTheRealtimeEndpointAndAcceptedOnWs() throws {
        let update = #"{"type":"session.update","event_id":"u1","session":{"audio":{"input":{"format":{"type":"audio/opus","rate":48000}}}}}"#
        var realtime = try EngineHarness(options: .init(allowsOpus: false))
        let refused = realtime.client(update)
        #expect(refused.types == ["error"])
        #expect(refused.errors.first?.param == "session.audio.input.format")
        #expect(refused.errors.first?.eventID == "u1")
        #expect(realtime.engine.configuration.inputAudioFormat == .pcm16)

        var ws = try EngineHarness(options: .init(allowsOpus: true))
        #expect(ws.client(update).types == ["session.updated"])
        #expect(ws.engine.configuration.inputAudioFormat == .opus)
    }

    @Test func transcriptionSessionUpdateInARealtimeSessionIsRefused() throws {
        var h = try EngineHarness()
        let actions = h.client(#"{"type":"transcription_session.update","event_id":"t1","session":{}}"#)
        #expect(actions.types == ["error"])
        #expect(actions.errors.first?.code == "invalid_value")
        #expect(actions.errors.first?.param == "type" && actions.errors.first?.eventID == "t1")
        #expect(actions.errors.first?.message.hasPrefix("transcription_session.update is for transcription sessions") == true)
    }

    /// On /ws, whose input is Opus until a session.update says pcm16, an append is refused before
    /// any of its audio reaches the engine; after the update it is taken.
    @Test func anAppendIsRefusedUntilTheInputFormatIsPCM16() throws {
        var options = SessionEngine.Options(allowsOpus: true)
        options.configuration.inputAudioFormat = .opus
        options.configuration.turnDetection = nil
        var h = try EngineHarness(options: options)
        _ = h.start()
        let append = #"{"type":"input_audio_buffer.append","event_id":"a1","audio":"\#(Base64.encode(PCM.littleEndianBytes([Int16](repeating: 1000, count: 2400))))"}"#
        let refused = h.client(append)
        #expect(refused.types == ["error"])
        #expect(refused.errors.first == EventError(
            type: .invalidRequest, code: "invalid_value",
            message: "input_audio_buffer.append carries pcm16 or G.711, but this session's input format is opus: send each Opus packet as a binary frame, or set the input format to pcm16, g711_ulaw or g711_alaw with session.update",
            eventID: "a1"))
        // Nothing was buffered.
        #expect(h.client(#"{"type":"input_audio_buffer.commit"}"#).errors.first?.code == "input_audio_buffer_commit_empty")

        #expect(h.client(#"{"type":"session.update","session":{"audio":{"input":{"format":{"type":"audio/pcm","rate":24000}}}}}"#).types == ["session.updated"])
        #expect(h.engine.configuration.inputAudioFormat == .pcm16)
        #expect(h.client(append).isEmpty)
        #expect(h.client(#"{"type":"input_audio_buffer.commit"}"#).types == ["input_audio_buffer.committed", "conversation.item.created"])
    }
}
