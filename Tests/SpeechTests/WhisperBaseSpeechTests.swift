import Codec
import JSON
import Models
import Session
@testable import Speech
import Testing
import TestSupport
import Loop
import SpeechContracts

/// The suites that decode with Whisper base in a helper of their own, one after another in one
/// process: run side by side (the test shards put them in two), each helper's decodes slowed the
/// other's past the client's 20 s on CI's two cores, and a turn failed.
@Suite(.serialized) enum WhisperBaseSuites {
    /// One helper for them (Whisper base loads in about a second), nil when it cannot start:
    /// tiny.en the default, as `parley serve` starts it; base loaded when a session first asks.
    static let helper = Sys.canRead(".venv-speech/whisper-base/model.bin")
        ? RunningSpeechHelper(["--whisper", ".venv-speech/whisper-tiny.en", "--whisper-base", ".venv-speech/whisper-base"]) : nil
    /// How long a decode may take (the server's default is 10 s), and a client's wait for an event:
    /// in one full `make test` of four a Spanish turn's decode passed 10 s under the whole suite's
    /// load and failed the turn (2026-11-29). What these suites judge is the words and the language,
    /// not how fast two shared cores find them (`make bench-languages` and `make bench-hearing`
    /// measure that).
    static let decodeSeconds = 30.0
    static let eventSeconds = 60
}

extension WhisperBaseSuites {
    /// Whisper base through a real server and a real speech helper started as `parley serve` starts it
    /// (tiny.en the default, Whisper base given too): sessions that ask for it by name
    /// (`audio.input.transcription.model`) get it, loaded then, and sentences in several voices come
    /// back as their words. Skipped only when it is not installed (scripts/tools/speech-models.sh
    /// assembles it).
    @Suite struct WhisperBaseSpeechTests {
        static let directory = ".venv-speech/whisper-base"
        static let installed = Sys.canRead(directory + "/model.bin")
        static var helper: RunningSpeechHelper? { WhisperBaseSuites.helper }

        /// Which model hears a session's choice: the one named if installed, a multilingual one for a
        /// language other than English (tiny.en would guess English words), else the default.
        @Test func aSessionsChoiceIsServedByAnInstalledModel() {
            let status = SpeechHelperStatus(socketPath: "/nonexistent")
            let both = WhisperTranscriber(helper: status, model: .whisper, installed: [.whisper, .whisperBase])
            let tinyOnly = WhisperTranscriber(helper: status, model: .whisper)
            let auto = WhisperTranscriber(helper: status, model: .whisper, installed: [.whisper, .whisperBase], language: nil)
            let cases: [(WhisperTranscriber, TranscriptionChoice, String)] = [
                (both, TranscriptionChoice(), "whisper-tiny.en"),
                (both, TranscriptionChoice(model: "whisper-base"), "whisper-base"),
                (both, TranscriptionChoice(model: "gpt-4o-transcribe"), "whisper-tiny.en"),
                (both, TranscriptionChoice(language: "en"), "whisper-tiny.en"),
                (both, TranscriptionChoice(language: "es"), "whisper-base"),
                (both, TranscriptionChoice(model: "whisper-tiny.en", language: "de"), "whisper-base"),
                (tinyOnly, TranscriptionChoice(model: "whisper-base", language: "fr"), "whisper-tiny.en"),
                // `--language auto`: a session that sets none is found out by Whisper base, unless it
                // asked for tiny.en (English) by name.
                (auto, TranscriptionChoice(), "whisper-base"),
                (auto, TranscriptionChoice(language: "en"), "whisper-tiny.en"),
                (auto, TranscriptionChoice(model: "whisper-tiny.en"), "whisper-tiny.en"),
            ]
            for (transcriber, choice, model) in cases {
                #expect(transcriber.model(for: choice) == model, "\(choice) on \(transcriber.installed)")
            }
            #expect(auto.serving(TranscriptionChoice()).language == nil && both.serving(TranscriptionChoice()).language == "en")
            #expect(auto.serving(TranscriptionChoice(model: "whisper-tiny.en")).language == "en")
        }

        @Test(.enabled(if: installed, "Whisper base is not installed in .venv-speech: run scripts/tools/speech-models.sh (make test does)"))
        func sentencesInSeveralVoicesComeBackAsTheirWords() throws {
            let helper = try #require(Self.helper, "the speech helper did not start with --whisper-base \(Self.directory) although it is installed")
            let pool = try WorkerPool(name: "test-speech", threads: 2, queueLimit: 64)
            defer { pool.stop() }
            let transcriber = WhisperTranscriber(helper: helper.status, model: .whisper, installed: [.whisper, .whisperBase],
                                                 timeoutSeconds: WhisperBaseSuites.decodeSeconds)
            let speech = SpeechServices(transcriber: transcriber, synthesizer: nil, pool: pool)
            let server = try TestServer({ $0.loops = 1 }, routes: { routes in
                RealtimeEndpoint(model: FixedReplyModel(reply: "Yes."), modelName: "test", speech: speech).install(on: &routes)
            })
            // Ten sentences in each of three voices (a formant voice, a diphone voice, a natural one),
            // appended and committed as manual turns by sessions that ask for Whisper base, each
            // transcript read back.
            let sentences = WordErrorRate.sentences.prefix(10)
            var total = 0, wrong = 0, misheard: [String] = []
            for voice in WordErrorRate.Voice.quick {
                let client = try TestClient(port: server.port, timeoutSeconds: WhisperBaseSuites.eventSeconds)
                #expect(try client.upgrade(path: "/v1/realtime").status == 101)
                _ = try client.readEvents(until: "session.created")
                try client.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":{"type":"realtime","audio":{"input":{"turn_detection":null,"transcription":{"model":"whisper-base"}}}}}"#.utf8)))
                let updated = try client.readEvents(until: "session.updated").events.last
                #expect(updated?["session"]?["audio"]?["input"]?["transcription"]?["model"]?.string == "whisper-base")
                var voiceWords = 0, voiceWrong = 0
                for sentence in sentences {
                    let turn = try CommittedTurn.heard(try voice.say(sentence), saying: sentence, on: client)
                    voiceWords += turn.words
                    voiceWrong += turn.errors
                    if turn.errors > 0 { misheard.append("\(voice): \"\(sentence)\" heard \"\(turn.text)\"") }
                }
                print("WER whisper-base, \(voice): \(Double(voiceWrong) / Double(voiceWords)) (\(voiceWrong) of \(voiceWords) words)")
                // Each voice is heard, not one carrying the others (a broken model hears nothing).
                #expect(Double(voiceWrong) / Double(voiceWords) <= 0.3, "\(voice): \(misheard)")
                total += voiceWords
                wrong += voiceWrong
            }
            let rate = Double(wrong) / Double(total)
            print("WER whisper-base, all: \(rate) (\(wrong) of \(total) words); misheard: \(misheard)")
            // Measured by `make bench-hearing` (docs/benchmarks.md, "Hearing"); the bound catches a
            // recogniser that has broken, as HelperSpeechTests' does.
            #expect(rate <= 0.15, "WER \(rate): \(misheard)")
        }
    }
}

/// A reply in another language is spoken by espeak-ng's voice of it, the API's voice kept as the
/// variant of the same kind; English as before.
@Suite struct LanguageVoiceTests {
    @Test func espeakNgVoicesFollowTheLanguage() {
        #expect(EspeakSynthesizer.espeakVoice("alloy") == "en-us" && EspeakSynthesizer.espeakVoice("fable") == "en-gb")
        #expect(EspeakSynthesizer.espeakVoice("coral", language: "en") == "en-us+f3")
        #expect(EspeakSynthesizer.espeakVoice("coral", language: "es") == "es+f3")
        #expect(EspeakSynthesizer.espeakVoice("ash", language: "fr") == "fr-fr+m3")
        #expect(EspeakSynthesizer.espeakVoice("alloy", language: "pt") == "pt-br")
        #expect(SpeechVoice(name: "alloy", language: "de").foreign && !SpeechVoice(name: "alloy", language: "en").foreign && !SpeechVoice(name: "alloy").foreign)
    }
}
