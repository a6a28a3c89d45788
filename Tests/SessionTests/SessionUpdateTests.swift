import Testing
@testable import Session
@testable import SessionEngine

@Suite struct SessionUpdateTests {
    private func update(_ session: String) throws(ProtocolError) -> SessionUpdate {
        let message = try ClientMessage.parse(#"{"type":"session.update","session":\#(session)}"#)
        guard case .event(let event) = message, case .sessionUpdate(let update) = event.kind else { fatalError("not a session.update") }
        return update
    }

    private func rejection(_ session: String) -> ProtocolError? {
        do {
            _ = try update(session)
            return nil
        } catch {
            return error
        }
    }

    @Test func gaShapeParses() throws {
        let u = try update(#"""
            {"type":"realtime","instructions":"Be kind.","output_modalities":["audio"],"max_output_tokens":200,
             "audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"turn_detection":{"type":"server_vad","threshold":0.7,"silence_duration_ms":800}},
                      "output":{"format":{"type":"audio/pcm"},"voice":"marin"}},
             "tools":[],"tracing":null}
            """#)
        #expect(u.instructions == "Be kind.")
        #expect(u.outputModalities == .audio)
        #expect(u.maxOutputTokens == .limited(200))
        #expect(u.inputAudioFormat == .pcm16 && u.outputAudioFormat == .pcm16)
        #expect(u.voice == "marin")
        #expect(u.turnDetection == .serverVAD(SessionUpdate.ServerVADChange(threshold: 0.7, silenceDurationMs: 800)))
    }

    @Test func betaShapeParses() throws {
        let u = try update(#"""
            {"modalities":["text","audio"],"voice":"alloy","input_audio_format":"pcm16","output_audio_format":"pcm16",
             "turn_detection":null,"max_response_output_tokens":"inf","temperature":0.8,"input_audio_transcription":null}
            """#)
        #expect(u.outputModalities == [.text, .audio])
        #expect(u.voice == "alloy")
        #expect(u.turnDetection == .manual)
        #expect(u.maxOutputTokens == .unlimited)
    }

    @Test func g711FormatsParseInBothShapes() throws {
        #expect(try update(#"{"audio":{"input":{"format":{"type":"audio/pcmu"}}}}"#).inputAudioFormat == .pcmu)
        #expect(try update(#"{"audio":{"output":{"format":{"type":"audio/pcma","rate":8000}}}}"#).outputAudioFormat == .pcma)
        #expect(try update(#"{"input_audio_format":"g711_ulaw","output_audio_format":"g711_alaw"}"#)
            == SessionUpdate(inputAudioFormat: .pcmu, outputAudioFormat: .pcma))
        var configuration = SessionConfiguration()
        try configuration.apply(try update(#"{"input_audio_format":"g711_alaw","output_audio_format":"g711_ulaw"}"#), allowsOpus: false)
        #expect(configuration.inputAudioFormat == .pcma && configuration.outputAudioFormat == .pcmu)
    }

    /// Each dialect reports the formats in its own shape: GA as OpenAI's objects (no rate: G.711 has one), beta by name.
    @Test func g711FormatsAreReportedInEachDialect() throws {
        var configuration = SessionConfiguration()
        configuration.inputAudioFormat = .pcmu
        configuration.outputAudioFormat = .pcma
        let info = SessionInfo(id: "sess_1", model: "m", configuration: configuration)
        let ga = info.json(dialect: .ga)
        #expect(ga["audio"]?["input"]?["format"] == .object([("type", .string("audio/pcmu"))]))
        #expect(ga["audio"]?["output"]?["format"] == .object([("type", .string("audio/pcma"))]))
        let beta = info.json(dialect: .beta)
        #expect(beta["input_audio_format"]?.string == "g711_ulaw" && beta["output_audio_format"]?.string == "g711_alaw")
    }

    /// What the OpenAI Agents SDK sends for its Twilio example (initial_model_settings with
    /// g711_ulaw both ways and semantic_vad, and the agent's instructions), as its GA model
    /// serialises it: one update, which must apply whole.
    @Test func theAgentsSDKsTelephonyUpdateAppliesWhole() throws {
        let u = try update(#"""
            {"type":"realtime","model":"gpt-realtime","output_modalities":["audio"],
             "instructions":"You are a helpful assistant. Keep responses concise since this is a phone conversation.",
             "audio":{"input":{"format":{"type":"audio/pcmu"},"noise_reduction":null,"transcription":null,
                               "turn_detection":{"type":"semantic_vad","create_response":true,"interrupt_response":true}},
                      "output":{"format":{"type":"audio/pcmu"},"voice":"ash","speed":1.0}},
             "tool_choice":"auto","tools":[],"tracing":null}
            """#)
        var configuration = SessionConfiguration()
        try configuration.apply(u, allowsOpus: false)
        #expect(configuration.instructions.hasPrefix("You are a helpful assistant."))
        #expect(configuration.inputAudioFormat == .pcmu && configuration.outputAudioFormat == .pcmu)
        #expect(configuration.turnDetection?.semanticEagerness == .auto && configuration.voice == "ash")
    }

    @Test func opusFormatsParseInBothShapes() throws {
        #expect(try update(#"{"audio":{"input":{"format":{"type":"audio/opus","rate":48000}}}}"#).inputAudioFormat == .opus)
        #expect(try update(#"{"output_audio_format":"opus"}"#).outputAudioFormat == .opus)
    }

    @Test func badValuesNameTheField() {
        let cases: [(String, String)] = [
            (#"{"audio":{"input":{"turn_detection":{"type":"server_vad","threshold":1.5}}}}"#, "session.audio.input.turn_detection.threshold"),
            (#"{"turn_detection":{"type":"server_vad","silence_duration_ms":-1}}"#, "session.turn_detection.silence_duration_ms"),
            (#"{"turn_detection":{"type":"server_vad","prefix_padding_ms":12.5}}"#, "session.turn_detection.prefix_padding_ms"),
            (#"{"turn_detection":{"type":"near_field_vad"}}"#, "session.turn_detection.type"),
            (#"{"turn_detection":{"create_response":"yes"}}"#, "session.turn_detection.create_response"),
            (#"{"output_modalities":["video"]}"#, "session.output_modalities"),
            (#"{"modalities":[]}"#, "session.modalities"),
            (#"{"input_audio_format":"g711_mulaw"}"#, "session.input_audio_format"),
            (#"{"audio":{"input":{"format":{"type":"audio/pcmu","rate":16000}}}}"#, "session.audio.input.format.rate"),
            (#"{"audio":{"input":{"format":{"type":"audio/pcm","rate":16000}}}}"#, "session.audio.input.format.rate"),
            (#"{"audio":{"output":{"format":{"type":"audio/mp3"}}}}"#, "session.audio.output.format.type"),
            (#"{"max_output_tokens":0}"#, "session.max_output_tokens"),
            (#"{"max_response_output_tokens":"lots"}"#, "session.max_response_output_tokens"),
            (#"{"voice":""}"#, "session.voice"),
            (#"{"instructions":7}"#, "session.instructions"),
            (#"{"type":"conversation"}"#, "session.type"),
            (#"{"audio":{"input":{"noise_reduction":{"type":"studio"}}}}"#, "session.audio.input.noise_reduction.type"),
            (#"{"input_audio_noise_reduction":{"type":"near"}}"#, "session.input_audio_noise_reduction.type"),
            (#"{"input_audio_noise_reduction":"far_field"}"#, "session.input_audio_noise_reduction"),
            (#"{"audio":{"input":{"transcription":{"language":7}}}}"#, "session.audio.input.transcription.language"),
            (#"{"audio":"loud"}"#, "session.audio"),
        ]
        for (session, param) in cases {
            let error = rejection(session)
            #expect(error?.code == .invalidValue, "\(session)")
            #expect(error?.param == param, "\(session): \(String(describing: error))")
            #expect(error?.message.hasPrefix("'\(param)'") == true, "\(session): \(String(describing: error))")
        }
    }

    @Test func semanticVADIsServedByTheServerDetector() throws {
        let u = try update(#"{"instructions":"Hi.","audio":{"input":{"turn_detection":{"type":"semantic_vad","eagerness":"auto","interrupt_response":false}}}}"#)
        #expect(u.instructions == "Hi.")
        #expect(u.turnDetection == .serverVAD(SessionUpdate.ServerVADChange(interruptResponse: false, semanticEagerness: .auto)))
    }

    @Test func semanticEagernessSetsTheSilenceAndIsReportedBack() throws {
        for (eagerness, silence) in [("low", 1000), ("medium", 500), ("high", 250), ("auto", 500)] {
            var configuration = SessionConfiguration()
            try configuration.apply(try update(#"{"turn_detection":{"type":"semantic_vad","eagerness":"\#(eagerness)"}}"#), allowsOpus: false)
            #expect(configuration.turnDetection?.silenceDurationMs == silence)
            #expect(configuration.turnDetection?.json["type"]?.string == "semantic_vad")
            #expect(configuration.turnDetection?.json["eagerness"]?.string == eagerness)
        }
        #expect(throws: ProtocolError.self) { try update(#"{"turn_detection":{"type":"semantic_vad","eagerness":"eager"}}"#) }
        var configuration = SessionConfiguration()
        try configuration.apply(try update(#"{"turn_detection":{"type":"server_vad","idle_timeout_ms":6000}}"#), allowsOpus: false)
        #expect(configuration.turnDetection?.idleTimeoutMs == 6000 && configuration.turnDetection?.json["idle_timeout_ms"]?.int == 6000)
        #expect(throws: ProtocolError.self) { try update(#"{"turn_detection":{"type":"server_vad","idle_timeout_ms":10}}"#) }
    }

    @Test func outOfRangeMessageSaysTheRangeAndTheValue() {
        #expect(rejection(#"{"turn_detection":{"threshold":2}}"#)?.message == "'session.turn_detection.threshold' must be a number from 0 to 1, got 2")
    }

    @Test func missingSessionObjectIsAMissingField() {
        #expect(throws: ProtocolError(.missingField, "missing required field 'session'", param: "session")) {
            try ClientMessage.parse(#"{"type":"session.update"}"#)
        }
    }

    @Test func instructionsAreBounded() {
        let long = String(repeating: "a", count: SessionConfiguration.maxInstructionBytes + 1)
        #expect(rejection(#"{"instructions":"\#(long)"}"#)?.param == "session.instructions")
    }

    @Test func applyingMergesServerVADFieldsIntoTheCurrentSettings() throws {
        var configuration = SessionConfiguration()
        try configuration.apply(try update(#"{"turn_detection":{"type":"server_vad","threshold":0.8}}"#), allowsOpus: false)
        try configuration.apply(try update(#"{"turn_detection":{"silence_duration_ms":900}}"#), allowsOpus: false)
        #expect(configuration.turnDetection == ServerVAD(threshold: 0.8, silenceDurationMs: 900))
        try configuration.apply(try update(#"{"turn_detection":null}"#), allowsOpus: false)
        #expect(configuration.turnDetection == nil)
        try configuration.apply(try update(#"{"turn_detection":{"type":"server_vad"}}"#), allowsOpus: false)
        #expect(configuration.turnDetection == ServerVAD())
    }

    @Test func opusIsOnlyAllowedWhereTheEndpointCarriesIt() throws {
        var configuration = SessionConfiguration()
        let opus = try update(#"{"instructions":"x","audio":{"input":{"format":{"type":"audio/opus"}}}}"#)
        #expect(throws: ProtocolError.self) { try configuration.apply(opus, allowsOpus: false) }
        // All or nothing: the instructions of the rejected update did not apply either.
        #expect(configuration == SessionConfiguration())
        do {
            try configuration.apply(opus, allowsOpus: false)
        } catch {
            #expect(error.param == "session.audio.input.format")
            #expect(error.message.contains("/ws"))
        }
        try configuration.apply(opus, allowsOpus: true)
        #expect(configuration.inputAudioFormat == .opus)
        #expect(configuration.instructions == "x")
    }

    /// Audio must come in the session's input format, and Opus only where the endpoint carries it;
    /// the errors are the ones the connection sends (its `error` event, `invalid_value`).
    @Test func audioIsCheckedAgainstTheInputFormat() {
        var configuration = SessionConfiguration()
        #expect(configuration.refusal(of: .append(bytes: 960), allowsOpus: false) == nil)
        #expect(configuration.refusal(of: .append(bytes: 960), allowsOpus: true) == nil)
        #expect(configuration.refusal(of: .append(bytes: 3), allowsOpus: false)
            == ProtocolError(.invalidValue, "'audio' must hold whole 16-bit samples (pcm16 is 2 bytes a sample), got 3 bytes", param: "audio"))
        #expect(configuration.refusal(of: .binaryFrame, allowsOpus: false)
            == ProtocolError(.invalidValue, "binary frames (Opus packets) are accepted on /ws only; send input_audio_buffer.append here"))
        #expect(configuration.refusal(of: .binaryFrame, allowsOpus: true)
            == ProtocolError(.invalidValue, "binary frames carry Opus packets, but this session's input format is pcm16: set the input format to opus with session.update, or send input_audio_buffer.append"))
        configuration.inputAudioFormat = .opus
        #expect(configuration.refusal(of: .binaryFrame, allowsOpus: true) == nil)
        #expect(configuration.refusal(of: .append(bytes: 960), allowsOpus: true)
            == ProtocolError(.invalidValue, "input_audio_buffer.append carries pcm16 or G.711, but this session's input format is opus: send each Opus packet as a binary frame, or set the input format to pcm16, g711_ulaw or g711_alaw with session.update"))
        // G.711 is a byte a sample: any count is whole samples.
        configuration.inputAudioFormat = .pcmu
        #expect(configuration.refusal(of: .append(bytes: 161), allowsOpus: false) == nil)
        #expect(configuration.refusal(of: .binaryFrame, allowsOpus: true)?.message.contains("input format is g711_ulaw") == true)
    }

    @Test func tokenLimitsApply() throws {
        var configuration = SessionConfiguration()
        try configuration.apply(try update(#"{"max_output_tokens":300}"#), allowsOpus: false)
        #expect(configuration.maxOutputTokens == 300)
        try configuration.apply(try update(#"{"max_output_tokens":"inf"}"#), allowsOpus: false)
        #expect(configuration.maxOutputTokens == nil)
    }

    /// Parley's echo guard extension: read in both shapes, and reported only once a client has
    /// set it, so that the SDKs' strict models never meet a field the API does not have.
    @Test func theEchoGuardIsReadInBothShapesAndReportedOnlyOnceSet() throws {
        var configuration = SessionConfiguration()
        for dialect in [Dialect.ga, .beta] {
            let text = "\(SessionInfo(id: "sess_1", model: "m", configuration: configuration).json(dialect: dialect))"
            #expect(!text.contains("echo_guard"))
        }
        try configuration.apply(try update(#"{"audio":{"input":{"echo_guard":true}}}"#), allowsOpus: false)
        #expect(configuration.echoGuard == true)
        let info = SessionInfo(id: "sess_1", model: "m", configuration: configuration)
        #expect(info.json(dialect: .ga)["audio"]?["input"]?["echo_guard"]?.bool == true)
        #expect(info.json(dialect: .beta)["input_audio_echo_guard"]?.bool == true)
        try configuration.apply(try update(#"{"input_audio_echo_guard":false}"#), allowsOpus: false)
        #expect(configuration.echoGuard == false)
        // An update that does not mention it leaves it as it was.
        try configuration.apply(try update(#"{"instructions":"Hi."}"#), allowsOpus: false)
        #expect(configuration.echoGuard == false)
        #expect(rejection(#"{"audio":{"input":{"echo_guard":"yes"}}}"#)?.param == "session.audio.input.echo_guard")
        #expect(rejection(#"{"input_audio_echo_guard":1}"#) != nil)
    }
}

/// `audio.output.speed` (GA) and `speed` (beta): parsed within the API's 0.25 to 1.5, kept, and
/// handed to the voice with each reply.
@Suite struct SessionSpeedTests {
    private func update(_ session: String) throws(ProtocolError) -> SessionUpdate {
        let message = try ClientMessage.parse(#"{"type":"session.update","session":\#(session)}"#)
        guard case .event(let event) = message, case .sessionUpdate(let update) = event.kind else { fatalError("not a session.update") }
        return update
    }

    @Test func speedIsReadInBothShapesAndRefusedOutOfRange() throws {
        #expect(try update(#"{"audio":{"output":{"speed":1.25}}}"#).speed == 1.25)
        #expect(try update(#"{"speed":0.5}"#).speed == 0.5)
        #expect(throws: ProtocolError.self) { try update(#"{"audio":{"output":{"speed":2}}}"#) }
        #expect(throws: ProtocolError.self) { try update(#"{"speed":"fast"}"#) }
    }

    @Test func aReplyIsSpokenAtTheSessionsSpeed() throws {
        var engine = SessionEngine(seed: 3, options: SessionEngine.Options(synthesizes: true))
        _ = engine.start()
        _ = engine.handle(.client(ClientEvent(.sessionUpdate(try update(#"{"output_modalities":["audio"],"audio":{"output":{"speed":1.3}}}"#)))))
        let started = engine.handle(.client(ClientEvent(.responseCreate(ResponseOverrides()))))
        guard case .startModel(let id, _, _)? = started.first(where: { if case .startModel = $0 { true } else { false } }) else {
            Issue.record("no model call: \(started)")
            return
        }
        let spoken = engine.handle(.modelDelta(responseID: id, text: "Hello there."))
        let voices = spoken.compactMap { if case .speech(.text(_, let voice, _, _)) = $0 { voice } else { nil } }
        #expect(voices.first?.speed == 1.3, "\(spoken)")
    }
}
