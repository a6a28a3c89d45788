@testable import Models
import Testing
import JSON
import Session
@testable import SessionEngine
import SpeechContracts

/// `audio.input.transcription`'s `model` and `language`: kept by the session, reported as the
/// recogniser that serves them, and handed to the recogniser with each turn.
@Suite struct TranscriptionChoiceTests {
    /// A server whose recognisers are tiny.en and base, base for any language but English.
    static func harness() throws -> EngineHarness {
        var options = SessionEngine.Options(transcribes: true)
        options.transcriptionModel = { choice in
            choice.model == "whisper-base" || (choice.language ?? "en") != "en" ? "whisper-base" : "whisper-tiny.en"
        }
        return try EngineHarness(options: options)
    }

    @Test func theChoiceIsKeptReportedAndGoesWithEachTurn() throws {
        var h = try Self.harness()
        let update = h.client(#"{"type":"session.update","session":{"type":"realtime","audio":{"input":{"transcription":{"model":"gpt-4o-transcribe","language":"es"}}}}}"#)
        guard case .sessionUpdated(let info)? = update.events.first?.kind else { Issue.record("\(update.types)"); return }
        let reported = info.json(dialect: .ga)["audio"]?["input"]?["transcription"]
        #expect(reported?["model"]?.string == "whisper-base" && reported?["language"]?.string == "es")
        #expect(info.json(dialect: .beta)["input_audio_transcription"]?["language"]?.string == "es")

        let clip = try SpeechClip.make(SessionEngineAudioTests.question)
        let begun = h.audio(clip.chunks(ms: 20)).compactMap { action -> TranscriptionChoice? in
            if case .transcription(.begin(_, _, _, let choice)) = action { choice } else { nil }
        }
        #expect(begun == [TranscriptionChoice(model: "gpt-4o-transcribe", language: "es")])

        // A new object replaces the choice; an update without one keeps it.
        _ = h.client(#"{"type":"session.update","session":{"instructions":"Hi."}}"#)
        #expect(h.engine.configuration.transcription.language == "es")
        let english = h.client(#"{"type":"session.update","session":{"input_audio_transcription":{"model":"whisper-1"}}}"#)
        guard case .sessionUpdated(let now)? = english.events.first?.kind else { Issue.record("\(english.types)"); return }
        #expect(h.engine.configuration.transcription == TranscriptionChoice(model: "whisper-1"))
        #expect(now.json(dialect: .ga)["audio"]?["input"]?["transcription"] == .object([("model", .string("whisper-tiny.en"))]))
    }

    @Test func aLanguageThatIsNoCodeOrAnEmptyModelIsRefused() throws {
        var h = try Self.harness()
        for (session, param) in [(#"{"audio":{"input":{"transcription":{"language":"Spanish"}}}}"#, "session.audio.input.transcription.language"),
                                 (#"{"input_audio_transcription":{"language":"e"}}"#, "session.input_audio_transcription.language"),
                                 (#"{"audio":{"input":{"transcription":{"model":""}}}}"#, "session.audio.input.transcription.model")] {
            let refused = h.client(#"{"type":"session.update","session":\#(session)}"#)
            #expect(refused.types == ["error"] && refused.errors.first?.param == param, "\(session): \(refused.types)")
        }
        #expect(h.engine.configuration.transcription == TranscriptionChoice())
    }
}
