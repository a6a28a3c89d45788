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

    /// A language the recogniser found is kept for the turns after, until the session sets one.
    @Test func aLanguageHeardIsKeptUntilTheSessionSetsOne() throws {
        var h = try Self.harness()
        let clip = try SpeechClip.make(SessionEngineAudioTests.question)
        var reported: [String?] = []
        func turn(_ heard: String?) -> TranscriptionChoice? {
            let actions = h.audio(clip.chunks(ms: 20) + [[Int16]](repeating: [Int16](repeating: 0, count: 320), count: 60))
            var choice: TranscriptionChoice?, itemID: String?
            for action in actions {
                if case .transcription(.begin(let item, _, _, let asked)) = action { (itemID, choice) = (item, asked) }
            }
            if let itemID {
                if let heard { _ = h.engine.handle(.transcription(itemID: itemID, .language(heard))) }
                let final = h.engine.handle(.transcription(itemID: itemID, .final("hola")))
                // The turn's language is on its transcript, as Parley's extension.
                let completed = final.events.first { $0.type(in: .ga) == "conversation.item.input_audio_transcription.completed" }
                reported.append(completed?.jsonValue(dialect: .ga)["language"]?.string)
            }
            return choice
        }
        #expect(turn("es") == TranscriptionChoice())
        #expect(turn("de") == TranscriptionChoice(language: "es"))
        #expect(h.engine.configuration.heardLanguage == "es")
        _ = h.client(#"{"type":"session.update","session":{"audio":{"input":{"transcription":{"language":"fr"}}}}}"#)
        #expect(turn(nil) == TranscriptionChoice(language: "fr"))
        #expect(reported == ["es", "es", "fr"])
    }

    /// The session's language goes to the model: said after the instructions, and in the options
    /// (the built-in agent's cue); English adds nothing.
    @Test func theLanguageIsToldToTheModel() throws {
        var h = try Self.harness()
        _ = h.client(#"{"type":"session.update","session":{"instructions":"Be brief.","audio":{"input":{"transcription":{"language":"es"}}}}}"#)
        _ = h.client(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"Hola"}]}}"#)
        let spanish = try h.client(#"{"type":"response.create"}"#).model()
        #expect(spanish.messages.first?.text == "Be brief.\n\nThe user speaks Spanish (es); answer in Spanish.")
        #expect(spanish.options.language == "es")

        var english = try Self.harness()
        _ = english.client(#"{"type":"session.update","session":{"instructions":"Be brief.","audio":{"input":{"transcription":{"language":"en"}}}}}"#)
        _ = english.client(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"}]}}"#)
        let asked = try english.client(#"{"type":"response.create"}"#).model()
        #expect(asked.messages.first?.text == "Be brief." && asked.options.language == "en")
        #expect(LanguageInstruction.appended(to: "", language: "xx") == "The user speaks the language whose ISO-639-1 code is xx; answer in that language.")
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
