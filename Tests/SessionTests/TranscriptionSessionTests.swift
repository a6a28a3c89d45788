import Codec
import JSON
@testable import Models
import Testing
@testable import Session
@testable import SpeechContracts
@testable import SessionEngine

/// Transcription sessions (`type: "transcription"`, the beta's `transcription_session.update`):
/// the same turns, VAD and recogniser as a realtime session, and never a response.
@Suite struct TranscriptionSessionTests {
    static func harness(transcribes: Bool = true) throws -> EngineHarness {
        var options = SessionEngine.Options(transcribes: transcribes)
        options.configuration.type = .transcription
        options.transcriptionModel = { _ in "whisper-tiny.en" }
        return try EngineHarness(options: options)
    }

    static func event(_ text: String) throws -> ClientEvent {
        guard case .event(let event) = try ClientMessage.parse(text) else { throw HarnessFailure(description: "not an event: \(text)") }
        return event
    }

    @Test func theGAShapeParses() throws {
        let event = try Self.event(#"""
            {"type":"session.update","session":{"type":"transcription","audio":{"input":{
              "format":{"type":"audio/pcm","rate":24000},
              "transcription":{"model":"gpt-4o-transcribe","language":"en","prompt":"names of rivers"},
              "noise_reduction":{"type":"far_field"},
              "turn_detection":{"type":"server_vad","threshold":0.6,"silence_duration_ms":400}}}}}
            """#)
        guard case .sessionUpdate(let update) = event.kind else { Issue.record("\(event)"); return }
        #expect(update.sessionType == .transcription && !update.fromTranscriptionEvent)
        #expect(update.inputAudioFormat == .pcm16)
        #expect(update.noiseReduction == .on(.farField))
        guard case .serverVAD(let vad)? = update.turnDetection else { Issue.record("no VAD"); return }
        #expect(vad.threshold == 0.6 && vad.silenceDurationMs == 400)
    }

    @Test func theBetaTranscriptionSessionUpdateParses() throws {
        let event = try Self.event(#"""
            {"type":"transcription_session.update","event_id":"t1","session":{
              "input_audio_format":"g711_ulaw",
              "input_audio_transcription":{"model":"whisper-1","language":"en","prompt":""},
              "turn_detection":{"type":"semantic_vad","eagerness":"high"},
              "input_audio_noise_reduction":{"type":"near_field"},
              "include":["item.input_audio_transcription.logprobs"]}}
            """#)
        #expect(event.eventID == "t1")
        guard case .sessionUpdate(let update) = event.kind else { Issue.record("\(event)"); return }
        #expect(update.sessionType == .transcription && update.fromTranscriptionEvent)
        #expect(update.inputAudioFormat == .pcmu && update.noiseReduction == .on(.nearField))
        guard case .serverVAD(let vad)? = update.turnDetection else { Issue.record("no VAD"); return }
        #expect(vad.semanticEagerness == .high)
    }

    @Test func aTurnEndsWithItsTranscriptAndNeverStartsAModel() throws {
        var h = try Self.harness()
        let created = h.start()
        #expect(created.events.first?.type(in: .ga) == "session.created")
        #expect(created.events.first?.type(in: .beta) == "transcription_session.created")
        let clip = try SpeechClip.make(SessionEngineAudioTests.question)
        // The speech, then three seconds of silence: plenty for a response, were there one.
        let actions = h.audio(clip.chunks(ms: 20) + [[Int16]](repeating: [Int16](repeating: 0, count: 320), count: 150))
        let types = actions.types.filter { $0 != "transcribe.audio" }
        #expect(types == ["input_audio_buffer.speech_started", "transcribe.begin", "input_audio_buffer.speech_stopped",
                          "input_audio_buffer.committed", "conversation.item.created", "transcribe.finish"])
        guard case .speechStarted(_, let itemID) = actions.events[0].kind else { return }
        let partial = h.engine.handle(.transcription(itemID: itemID, .partial("what is")))
        #expect(partial.types == ["conversation.item.input_audio_transcription.delta"])
        let final = h.engine.handle(.transcription(itemID: itemID, .final("what is twelve times seven")))
        #expect(final.types == ["conversation.item.input_audio_transcription.completed"])
        #expect(h.engine.activeResponseID == nil)
        // A failed transcription is reported, and answered by nothing either.
        let next = h.audio(clip.chunks(ms: 20) + [[Int16]](repeating: [Int16](repeating: 0, count: 320), count: 50))
        guard case .speechStarted(_, let second)? = next.events.first?.kind else { Issue.record("no second turn: \(next.types)"); return }
        let failed = h.engine.handle(.transcription(itemID: second, .failed(ModelError(code: "transcription_failed", message: "upstream 500"))))
        #expect(failed.types == ["conversation.item.input_audio_transcription.failed"])
        #expect(!(actions + final + next + failed).types.contains("startModel"))
    }

    /// `semantic_vad` with Smart Turn ends a transcription session's turns as a realtime one's,
    /// with `create_response` left at true, and still starts no model.
    @Test func semanticVADEndsTheTurnOnTheModelsVerdictWithoutAResponse() throws {
        var options = SessionEngine.Options(transcribes: true)
        options.configuration.type = .transcription
        options.voiceActivityModel = ScriptedVoiceActivityModel()
        options.judgesTurns = true
        var vad = ServerVAD(threshold: 0.5, prefixPaddingMs: 0, silenceDurationMs: 500, createResponse: true)
        vad.semanticEagerness = .auto
        options.configuration.turnDetection = vad
        var engine = SessionEngine(seed: 9, options: options)
        _ = engine.start()
        let samples = [Int16](repeating: 0, count: 320 * 16) + [Int16](repeating: 8000, count: 640 * 16) + [Int16](repeating: 0, count: 260 * 16)
        var actions: [SessionAction] = []
        for start in stride(from: 0, to: samples.count, by: 320) { actions += engine.handle(.audio(Array(samples[start..<(start + 320)]))) }
        var asked: String?
        for case .turnModel(.judge(let itemID)) in actions { asked = itemID }
        let itemID = try #require(asked, "\(actions.types)")
        let ended = engine.handle(.turnVerdict(itemID: itemID, .success(TurnVerdict(complete: true, probability: 0.95))))
        #expect(ended.turnEnds == [.model])
        #expect(ended.types.filter { $0 != "transcribe.audio" } == ["input_audio_buffer.speech_stopped", "input_audio_buffer.committed",
                                                                     "conversation.item.created", "transcribe.finish"])
        let final = engine.handle(.transcription(itemID: itemID, .final("book a flight")))
        #expect(final.types == ["conversation.item.input_audio_transcription.completed"])
        #expect(engine.activeResponseID == nil)
    }

    @Test func responseCreateIsRefusedNamingTheProblem() throws {
        var h = try Self.harness()
        let actions = h.client(#"{"type":"response.create","event_id":"r1"}"#)
        #expect(actions.types == ["error"])
        let error = try #require(actions.errors.first)
        #expect(error.type == .invalidRequest && error.code == "invalid_session_type" && error.eventID == "r1")
        #expect(error.message.hasPrefix("response.create is not available in a transcription session"))
        #expect(h.engine.activeResponseID == nil)
    }

    @Test func theTypeCannotBeSwitchedEitherWay() throws {
        var transcription = try Self.harness()
        let back = transcription.client(#"{"type":"session.update","session":{"type":"realtime"}}"#)
        #expect(back.types == ["error"] && back.errors.first?.param == "session.type")
        #expect(back.errors.first?.message.hasPrefix("'session.type' cannot change from 'transcription' to 'realtime'") == true)
        #expect(transcription.engine.configuration.type == .transcription)

        var realtime = try EngineHarness(options: .init(transcribes: true))
        let over = realtime.client(#"{"type":"session.update","session":{"type":"transcription"}}"#)
        #expect(over.types == ["error"] && over.errors.first?.param == "session.type")
        #expect(realtime.engine.configuration.type == .realtime)
    }

    @Test func updatesAreAnsweredWithTheTranscriptionSessionInEachDialect() throws {
        var h = try Self.harness()
        let beta = h.client(#"{"type":"transcription_session.update","session":{"input_audio_noise_reduction":{"type":"far_field"},"turn_detection":{"type":"server_vad","silence_duration_ms":300}}}"#)
        #expect(beta.events.first?.type(in: .beta) == "transcription_session.updated")
        #expect(beta.events.first?.type(in: .ga) == "session.updated")
        guard case .sessionUpdated(let info)? = beta.events.first?.kind else { Issue.record("\(beta.types)"); return }
        let betaJSON = info.json(dialect: .beta)
        #expect(betaJSON["object"]?.string == "realtime.transcription_session")
        #expect(betaJSON["input_audio_noise_reduction"]?["type"]?.string == "far_field")
        #expect(betaJSON["input_audio_transcription"]?["model"]?.string == "whisper-tiny.en")
        #expect(betaJSON["turn_detection"]?["silence_duration_ms"]?.int == 300)
        #expect(betaJSON["modalities"] == nil && betaJSON["instructions"] == nil)

        let gaJSON = info.json(dialect: .ga)
        #expect(gaJSON["type"]?.string == "transcription" && gaJSON["object"]?.string == "realtime.transcription_session")
        #expect(gaJSON["audio"]?["input"]?["noise_reduction"]?["type"]?.string == "far_field")
        #expect(gaJSON["audio"]?["input"]?["transcription"]?["model"]?.string == "whisper-tiny.en")
        #expect(gaJSON["audio"]?["input"]?["format"]?["type"]?.string == "audio/pcm")
        #expect(gaJSON["audio"]?["output"] == nil && gaJSON["output_modalities"] == nil)

        // GA's session.update with the type it has (or none) updates it too.
        let ga = h.client(#"{"type":"session.update","session":{"type":"transcription","audio":{"input":{"noise_reduction":null}}}}"#)
        #expect(ga.types == ["session.updated"])
        #expect(h.engine.configuration.noiseReduction == nil)
    }
}

/// `noise_reduction` (GA) / `input_audio_noise_reduction` (beta), in realtime sessions too.
@Suite struct NoiseReductionSettingTests {
    @Test func isSetInBothShapesTurnedOffByNullAndEchoedBack() throws {
        var h = try EngineHarness()
        let on = h.client(#"{"type":"session.update","session":{"type":"realtime","audio":{"input":{"noise_reduction":{"type":"near_field","strength":1}}}}}"#)
        #expect(on.types == ["session.updated"])
        #expect(h.engine.configuration.noiseReduction == .nearField)
        guard case .sessionUpdated(let info)? = on.events.first?.kind else { return }
        #expect(info.json(dialect: .ga)["audio"]?["input"]?["noise_reduction"] == .object([("type", .string("near_field"))]))
        #expect(info.json(dialect: .beta)["input_audio_noise_reduction"] == .object([("type", .string("near_field"))]))

        _ = h.client(#"{"type":"session.update","session":{"input_audio_noise_reduction":{"type":"far_field"}}}"#)
        #expect(h.engine.configuration.noiseReduction == .farField)
        // Left out: unchanged.
        _ = h.client(#"{"type":"session.update","session":{"instructions":"Be brief."}}"#)
        #expect(h.engine.configuration.noiseReduction == .farField)

        let off = h.client(#"{"type":"session.update","session":{"audio":{"input":{"noise_reduction":null}}}}"#)
        #expect(h.engine.configuration.noiseReduction == nil)
        guard case .sessionUpdated(let offInfo)? = off.events.first?.kind else { return }
        #expect(offInfo.json(dialect: .ga)["audio"]?["input"]?["noise_reduction"]?.isNull == true)
        #expect(offInfo.json(dialect: .beta)["input_audio_noise_reduction"]?.isNull == true)
    }

    @Test func anUnknownTypeIsRefusedNamingTheParamAndChangesNothing() throws {
        var h = try EngineHarness()
        let refused = h.client(#"{"type":"session.update","event_id":"n1","session":{"instructions":"x","audio":{"input":{"noise_reduction":{"type":"studio"}}}}}"#)
        #expect(refused.types == ["error"])
        let error = try #require(refused.errors.first)
        #expect(error.type == .invalidRequest && error.code == "invalid_value" && error.eventID == "n1")
        #expect(error.param == "session.audio.input.noise_reduction.type")
        #expect(error.message == "'session.audio.input.noise_reduction.type' must be one of 'near_field', 'far_field', got 'studio'")
        #expect(h.engine.configuration.noiseReduction == nil && h.engine.configuration.instructions == "")

        let untyped = h.client(#"{"type":"session.update","session":{"input_audio_noise_reduction":{}}}"#)
        #expect(untyped.errors.first?.code == "missing_field" && untyped.errors.first?.param == "session.input_audio_noise_reduction.type")
    }
}
