import Codec
import JSON
@testable import Models
import Server
import Session
@testable import Speech
import Testing
import TestSupport
import Loop
#if canImport(Glibc)
import Glibc
#endif
import SpeechContracts

extension WhisperBaseSuites {
    /// Sessions in Spanish, German, French and Italian end to end (issue 75), through a real server
    /// and a real speech helper started as `parley serve` starts it (tiny.en the default, Whisper base
    /// loaded when a session first needs it), in two of espeak-ng's speakers of each language:
    ///
    /// - a session that sets its language is heard in it by Whisper base (each transcript says the
    ///   language), and its reply is spoken by espeak-ng's voice of it: the reply's audio, sent back to
    ///   a transcription session in that language, reads as the reply's words;
    /// - on a server with `--language auto`, a session that sets none has its language found from
    ///   its first turn.
    ///
    /// Manual turns (the clip appended whole and committed), so each decode reads the same window
    /// every run. The bounds are wide: espeak-ng's formant voices are hard for Whisper base in some of
    /// these languages (`make bench-languages` measures them; docs/benchmarks.md, "Languages"), and a
    /// bound catches a path that is broken (English guesses, no language, no voice), not a point worse.
    ///
    /// Their figures are the same every run, alone and beside two busy loops, since the decodes are
    /// bounded and beam search alone; their decodes may take `WhisperBaseSuites.decodeSeconds`.
    @Suite struct LanguageSpeechTests {
        static let installed = Sys.canRead(".venv-speech/whisper-base/model.bin")
        static var helper: RunningSpeechHelper? { WhisperBaseSuites.helper }
        /// The bench's sentences (scripts/benchmarks/language_sentences.json), by language.
        static let sentences: [String: [String]] = {
            guard let bytes = Sys.readFile("scripts/benchmarks/language_sentences.json"),
                  let table = try? JSON(parsing: String(decoding: bytes, as: UTF8.self)).object else { return [:] }
            var byLanguage: [String: [String]] = [:]
            for (language, list) in table { byLanguage[language] = list.array?.compactMap(\.string) }
            return byLanguage
        }()
        /// What the session's model answers, in its language.
        static let replies = ["es": "Claro, tengo una mesa libre para dos personas esta noche.",
                              "de": "Gern, heute Abend ist ein Tisch für zwei Personen frei.",
                              "fr": "Bien sûr, je peux changer la date de votre vol.",
                              "it": "Certo, stasera ho un tavolo libero per due persone."]
        static let espeak = ["es": "es", "de": "de", "fr": "fr-fr", "it": "it"]
        /// The languages the found sessions' server expects.
        static let expected = ["en", "es", "de", "fr", "it"]
        /// The most a language's median turn may err, over its two speakers' four turns, and its best
        /// turn: English guesses at Spanish, or no words, err on nearly every word of every turn.
        /// Whisper base reads espeak-ng's voices of these languages at 33 to 69 % (`make
        /// bench-languages`, 2026-11-29), French worst (the median turns here: es 0.36, de 0.66, it
        /// 0.73, fr 0.87; best turns 0.17 to 0.5): the voices, formant synthesis, are what it hears
        /// worst; the bounds are no target.
        static let bound = 0.9
        static let bestBound = 0.6
        /// The reply heard back: espeak-ng's French reply reads at 0.8 every run (2026-11-29), the
        /// others at 0.1 to 0.4; an English voice, or English guesses, err on every word.
        static let replyBound = 0.9

        /// `reply`: what the model answers (the language's own, by default).
        func server(_ helper: RunningSpeechHelper, language: String, serverLanguage: String?, reply: String? = nil) throws -> (TestServer, WorkerPool) {
            let pool = try WorkerPool(name: "test-speech", threads: 2, queueLimit: 64)
            // A server that finds a session's language does so among the languages it expects
            // (`--language auto:en,es,de,fr,it`), as docs/operations.md advises.
            let transcriber = WhisperTranscriber(helper: helper.status, model: .whisper, installed: [.whisper, .whisperBase], language: serverLanguage,
                                                 foundAmong: serverLanguage == nil ? Self.expected : [], timeoutSeconds: WhisperBaseSuites.decodeSeconds)
            // As `parley serve` has it, with espeak-ng's English voice for Piper's joe.
            let espeak = EspeakSynthesizer(pool: pool)
            let speech = SpeechServices(transcriber: transcriber, synthesizer: LanguageVoices(english: espeak, others: espeak), pool: pool)
            let server = try TestServer({ $0.loops = 1 }, routes: { routes in
                RealtimeEndpoint(model: FixedReplyModel(reply: reply ?? Self.replies[language] ?? ""), modelName: "test", speech: speech).install(on: &routes)
            })
            return (server, pool)
        }

        func voices(_ language: String) -> [WordErrorRate.Voice] {
            let name = Self.espeak[language] ?? language
            return [.espeak(name, wordsPerMinute: 165), .espeak(name + "+f3", wordsPerMinute: 140)]
        }

        func session(_ server: TestServer, _ update: String) throws -> TestClient {
            let client = try TestClient(port: server.port, timeoutSeconds: WhisperBaseSuites.eventSeconds)
            #expect(try client.upgrade(path: "/v1/realtime").status == 101)
            _ = try client.readEvents(until: "session.created")
            try client.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":\#(update)}"#.utf8)))
            _ = try client.readEvents(until: "session.updated")
            return client
        }

        /// One committed turn: its transcript and the language the server says it is in (none, and
        /// no words, when its transcription failed).
        func turn(_ samples: [Int16], on client: TestClient) throws -> (text: String, language: String?) {
            try CommittedTurn.append(samples, on: client)
            try client.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.commit"}"#.utf8)))
            while true {
                let event = try client.readEvent()
                switch event["type"]?.string {
                case "conversation.item.input_audio_transcription.completed":
                    return (event["transcript"]?.string ?? "", event["language"]?.string)
                case "conversation.item.input_audio_transcription.failed":
                    return ("", nil)
                default: continue
                }
            }
        }

        @Test(.enabled(if: installed, "Whisper base is not installed (scripts/tools/speech-models.sh)"),
              arguments: ["es", "de", "fr", "it"])
        func aSessionThatSetsItsLanguageIsHeardAndAnsweredInIt(language: String) throws {
            let helper = try #require(Self.helper, "the speech helper did not start with Whisper base although it is installed")
            let (server, pool) = try server(helper, language: language, serverLanguage: "en")
            defer { pool.stop() }
            let sentences = Array((Self.sentences[language] ?? []).prefix(2))
            #expect(sentences.count == 2, "scripts/benchmarks/language_sentences.json has no \(language)")
            var rates: [Double] = [], heard: [String] = []
            var reply: [Int16] = []
            for voice in voices(language) {
                let client = try session(server, #"{"type":"realtime","output_modalities":["audio"],"audio":{"input":{"turn_detection":null,"transcription":{"language":"\#(language)"}}}}"#)
                for sentence in sentences {
                    let (text, said) = try turn(try voice.say(sentence), on: client)
                    #expect(said == language, "\(voice): the transcript's language is \(said ?? "none")")
                    let reference = WordErrorRate.words(sentence)
                    rates.append(Double(WordErrorRate.errors(reference, WordErrorRate.words(text))) / Double(max(1, reference.count)))
                    heard.append("\(voice): \"\(sentence)\" heard \"\(text)\"")
                }
                if reply.isEmpty {
                    try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
                    for event in try client.readEvents(until: "response.done").events where event["type"]?.string == "response.output_audio.delta" {
                        if let bytes = Base64.decode(Array((event["delta"]?.string ?? "").utf8)) {
                            reply += bytes.withUnsafeBytes { PCM.int16s(littleEndian: $0) }
                        }
                    }
                }
            }
            // The median turn's, and the best one's: a broken path (English guesses) errs on every
            // turn, while Whisper base hears one turn of four at least fairly even where espeak-ng's
            // voice is hardest for it (French: 0.3, 0.6, 1.14, 1.14; the same every run since its
            // decodes are beam search alone).
            rates.sort()
            let rate = (rates[1] + rates[2]) / 2
            print("WER \(language), set: the median turn's \(rate) (\(rates)): \(heard)")
            #expect(rates.count == 4 && rate <= Self.bound && rates[0] <= Self.bestBound, "WER \(rates): \(heard)")

            // The reply, spoken by espeak-ng's voice of the language, heard back in it.
            #expect(reply.count > 24_000, "the reply's audio: \(reply.count) samples")
            let listener = try session(server, #"{"type":"realtime","audio":{"input":{"turn_detection":null,"transcription":{"language":"\#(language)"}}}}"#)
            let (echoed, _) = try turn(reply, on: listener)
            let reference = WordErrorRate.words(Self.replies[language] ?? "")
            let replyRate = Double(WordErrorRate.errors(reference, WordErrorRate.words(echoed))) / Double(reference.count)
            print("the reply in \(language), heard back: \(replyRate): \"\(echoed)\"")
            #expect(replyRate <= Self.replyBound, "the reply heard back as \"\(echoed)\"")
        }

        /// Found from the first turn, or not said, on a server that finds languages among the five it
        /// expects: Whisper base is sure enough (a share of 0.75 of those five) of these clips'
        /// Spanish, German and French for one speaker of two at least (2026-11-29: both), and of none
        /// of the Italian ones (`make bench-languages`: Italian found on 30 % of first turns); it never
        /// keeps another language for them.
        @Test(.enabled(if: installed, "Whisper base is not installed (scripts/tools/speech-models.sh)"),
              arguments: ["es", "de", "fr", "it"])
        func aSessionThatSetsNoneHasItsLanguageFound(language: String) throws {
            let helper = try #require(Self.helper, "the speech helper did not start with Whisper base although it is installed")
            let (server, pool) = try server(helper, language: language, serverLanguage: nil)
            defer { pool.stop() }
            let sentence = try #require(Self.sentences[language]?.dropFirst(2).first)
            var found: [String?] = []
            for voice in voices(language) {
                let client = try session(server, #"{"type":"realtime","audio":{"input":{"turn_detection":null}}}"#)
                found.append(try turn(try voice.say(sentence), on: client).language)
            }
            print("the language of \(language) sessions found as \(found)")
            if language != "it" { #expect(found.contains(language), "\(found)") }
            #expect(found.allSatisfy { $0 == nil || $0 == language }, "\(found)")
        }

        /// A Spanish session whose model answers in English: the reply is spoken by the English voice
        /// (`TextLanguage` in `LanguageVoices`), and heard back as English; read by espeak-ng's Spanish
        /// voice, its English words are Spanish sounds.
        @Test(.enabled(if: installed, "Whisper base is not installed (scripts/tools/speech-models.sh)"))
        func aReplyTheModelWroteInAnotherLanguageIsSpokenInIt() throws {
            let helper = try #require(Self.helper, "the speech helper did not start with Whisper base although it is installed")
            let english = "Of course, the table is yours for tonight, and we will see you at eight."
            let (server, pool) = try server(helper, language: "es", serverLanguage: "en", reply: english)
            defer { pool.stop() }
            let client = try session(server, #"{"type":"realtime","output_modalities":["audio"],"audio":{"input":{"turn_detection":null,"transcription":{"language":"es"}}}}"#)
            try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
            var reply: [Int16] = []
            for event in try client.readEvents(until: "response.done").events where event["type"]?.string == "response.output_audio.delta" {
                if let bytes = Base64.decode(Array((event["delta"]?.string ?? "").utf8)) { reply += bytes.withUnsafeBytes { PCM.int16s(littleEndian: $0) } }
            }
            #expect(reply.count > 24_000, "the reply's audio: \(reply.count) samples")
            let listener = try session(server, #"{"type":"realtime","audio":{"input":{"turn_detection":null}}}"#)
            let (heard, _) = try turn(reply, on: listener)
            let reference = WordErrorRate.words(english)
            let rate = Double(WordErrorRate.errors(reference, WordErrorRate.words(heard))) / Double(reference.count)
            print("an English reply in a Spanish session, heard back by tiny.en: \(rate): \"\(heard)\"")
            #expect(rate <= 0.3, "heard back as \"\(heard)\"")
        }
    }
}
