import Codec
import JSON
@testable import Models
import Server
import Session
import Speech
import Testing
import TestSupport
import Loop
import Synchronization
#if canImport(Glibc)
import Glibc
@testable import SpeechContracts
#endif

/// The speech helper's recogniser and voice (Whisper tiny.en, Piper's joe) through a real server
/// and a real helper process: word error rate over 30 clips in three voices, a spoken reply, and a
/// helper that dies mid-turn.
@Suite(.serialized) struct HelperSpeechTests {
    /// One helper for the suite (it takes about 3 s to load its models), up before any test uses it.
    static let helper = RunningSpeechHelper(["--whisper", ".venv-speech/whisper-tiny.en", "--piper", ".venv-speech/voice-int8/en_US-joe-medium-int8.ort"])

    func server(_ helper: RunningSpeechHelper, reply: String = "It is sunny in Paris today.", sphinx: Bool = false,
                synthesizer: (any Synthesizer)? = nil) throws -> (TestServer, WorkerPool) {
        let pool = try WorkerPool(name: "test-speech", threads: 2, queueLimit: 64)
        let transcriber: any Transcriber = sphinx ? try SphinxTranscriber(decoders: 2, pool: pool) : WhisperTranscriber(helper: helper.status)
        let speech = SpeechServices(transcriber: transcriber, synthesizer: synthesizer ?? PiperSynthesizer(helper: helper.status), pool: pool)
        let server = try TestServer({ $0.loops = 1 }, routes: { routes in
            RealtimeEndpoint(model: FixedReplyModel(reply: reply), modelName: "test", speech: speech).install(on: &routes)
        })
        return (server, pool)
    }

    /// Manual turns (no VAD): `WordErrorRate`'s sentences are appended and committed, and each
    /// transcript read back; pocketsphinx, the embedded recogniser, on the same clips beside it.
    /// `make test` reads each of the 30 sentences once, in one of three voices in turn (ten
    /// each: every sentence read against every voice was 203 s of the Swift suites' wall time, and
    /// the bound catches a recogniser that has broken, which ten sentences a voice show as well);
    /// `make bench-wer` (PARLEY_WER_VOICES=all) reads every sentence in every voice and speed, for
    /// docs/benchmarks.md.
    @Test(arguments: ["whisper", "pocketsphinx"])
    func wordErrorRateOverThirtySentencesInSeveralVoices(recogniser: String) throws {
        let helper = try #require(Self.helper, "the speech helper did not start: run scripts/tools/speech-models.sh (make test does)")
        let (server, pool) = try server(helper, sphinx: recogniser == "pocketsphinx")
        defer { pool.stop() }
        let every = getenv("PARLEY_WER_VOICES").map { String(cString: $0) } == "all"
        let voices = every ? WordErrorRate.Voice.all : WordErrorRate.Voice.quick
        var total = 0, wrong = 0, worst: [String] = []
        for (v, voice) in voices.enumerated() {
            var voiceWords = 0, voiceWrong = 0
            // Ten sentences a session: sent faster than real time, they stay within the session's
            // 30 s of audio allowed ahead of its clock. The quick read gives each voice its ten.
            let firsts = every ? Array(stride(from: 0, to: WordErrorRate.sentences.count, by: 10)) : [(v * 10) % WordErrorRate.sentences.count]
            for first in firsts {
                let client = try TestClient(port: server.port, timeoutSeconds: 20)
                #expect(try client.upgrade(path: "/v1/realtime").status == 101)
                _ = try client.readEvents(until: "session.created")
                try client.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":{"type":"realtime","audio":{"input":{"turn_detection":null}}}}"#.utf8)))
                _ = try client.readEvents(until: "session.updated")
                for sentence in WordErrorRate.sentences[first..<min(first + 10, WordErrorRate.sentences.count)] {
                    let turn = try CommittedTurn.heard(try voice.say(sentence), saying: sentence, on: client)
                    voiceWords += turn.words
                    voiceWrong += turn.errors
                    if turn.errors > 0 { worst.append("\(voice): \"\(sentence)\" heard \"\(turn.text)\"") }
                }
            }
            print("WER \(recogniser), \(voice): \(Double(voiceWrong) / Double(voiceWords)) (\(voiceWrong) of \(voiceWords) words)")
            total += voiceWords
            wrong += voiceWrong
        }
        let rate = Double(wrong) / Double(total)
        print("WER \(recogniser), all: \(rate) (\(wrong) of \(total) words); misheard: \(worst)")
        // Measured over every voice (docs/benchmarks.md, "Word error rate"): Whisper 8.7 %, 3.3-6.2 %
        // on Piper's voice and 11-14 % on espeak-ng's; pocketsphinx 39.6 %. The bounds catch a
        // recogniser that has broken, not one that is a point worse.
        #expect(rate <= (recogniser == "whisper" ? 0.15 : 0.75), "WER \(rate): \(worst)")
    }

    /// A session with spoken replies that has asked for one (`response.create`).
    func askForASpokenReply(_ server: TestServer) throws -> TestClient {
        let client = try TestClient(port: server.port, timeoutSeconds: 20)
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        _ = try client.readEvents(until: "session.created")
        try client.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"]}}"#.utf8)))
        _ = try client.readEvents(until: "session.updated")
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        return client
    }

    /// A spoken reply in Piper's voice: pcm16 deltas, the reply's whole length of speech.
    @Test func aReplyIsSpokenInPipersVoice() throws {
        let helper = try #require(Self.helper, "the speech helper did not start")
        let reply = "It is sunny in Paris today, with a light wind from the west. Take a jacket anyway."
        let (server, pool) = try server(helper, reply: reply)
        defer { pool.stop() }
        let client = try askForASpokenReply(server)
        let events = try client.readEvents(until: "response.done").events
        let audio = events.filter { $0["type"]?.string == "response.output_audio.delta" }.compactMap { $0["delta"]?.string }
        let bytes = audio.compactMap { Base64.decode(Array($0.utf8)) }.reduce(0) { $0 + $1.count }
        let seconds = Double(bytes) / 2 / 24_000
        // About 0.3 s a word at Piper's pace.
        #expect(seconds > 3 && seconds < 12, "\(seconds) s of speech")
        #expect(events.last?["response"]?["status"]?.string == "completed")
    }

    /// A reply's first audio leaves as its first clause is ready, not when its sentence is: one
    /// long sentence of four clauses, spoken by Piper through the helper (its first clause of three
    /// words or more sent on its own), whose first audio delta reaches the client before the
    /// helper has finished the sentence.
    @Test func theFirstFrameLeavesBeforeItsSentenceIsSynthesised() throws {
        let helper = try #require(Self.helper, "the speech helper did not start")
        let sentence = "Well, since you asked about the weather in Paris this afternoon, it will be sunny and warm, with a light breeze from the west, and no rain at all."
        let timed = SentenceClock(PiperSynthesizer(helper: helper.status))
        let (server, pool) = try server(helper, reply: sentence, synthesizer: timed)
        defer { pool.stop() }
        let client = try askForASpokenReply(server)
        var firstAudio: UInt64?
        while let event = try? client.readEvent(), event["type"]?.string != "response.done" {
            if firstAudio == nil, event["type"]?.string == "response.output_audio.delta" { firstAudio = MonotonicClock.nanoseconds() }
        }
        let synthesised = try #require(timed.lastFinished, "the sentence was never synthesised")
        let first = try #require(firstAudio, "no audio")
        #expect(first < synthesised, "the first audio came \(Double(Int64(first) - Int64(synthesised)) / 1e6) ms after the sentence was synthesised")
        print("first audio \(Double(Int64(synthesised) - Int64(first)) / 1e6) ms before the sentence's synthesis ended")
    }
}

/// A synthesiser that passes another's events on unchanged and notes when each text's synthesis
/// finished (monotonic nanoseconds): what a test compares the client's first audio against.
final class SentenceClock: Synthesizer, @unchecked Sendable {
    private let voice: any Synthesizer
    private let finishedAt = Mutex<[String: UInt64]>([:])
    var name: String { voice.name }

    init(_ voice: any Synthesizer) { self.voice = voice }

    func speak(_ text: String, voice speaker: SpeechVoice, urgency: SynthesisUrgency, on loop: EventLoop, _ onEvent: @escaping (SynthesisEvent) -> Void) -> any ModelCall {
        voice.speak(text, voice: speaker, urgency: urgency, on: loop) { [self] event in
            if case .finished = event { finishedAt.withLock { $0[text] = MonotonicClock.nanoseconds() } }
            onEvent(event)
        }
    }

    func finished(_ text: String) -> UInt64? { finishedAt.withLock { $0[text] } }

    /// When the last of the texts it was given finished (a sentence may go in pieces: its first
    /// clause first).
    var lastFinished: UInt64? { finishedAt.withLock { $0.values.max() } }
}
