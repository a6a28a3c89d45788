import Codec
import JSON
@testable import Models
import Server
import Session
import Speech
import Testing
import TestSupport
import Loop
#if canImport(Glibc)
import Glibc
@testable import SpeechContracts
#endif

/// Backchannels and barge-ins with real speech over a real socket: one second into a long spoken
/// reply on /ws, the listener says something (espeak-ng, in two voices), streamed as pcm16 on the
/// test's clock (`ClockedConversation`: time moves as the audio does, and waits for every decode),
/// heard by the server's VAD and pocketsphinx. "Uh huh" must not cut the reply; "stop" and "wait,
/// actually I meant Paris" must. Every case runs in `make test`: on the clock, a case takes its
/// work's time, not its audio's.
@Suite(.serialized) struct InterruptionEndToEndTests {
    static let story = "Once upon a time, a small boat left the harbour at dawn. The sea was calm and grey. "
        + "Nobody on board knew how far the wind would carry them, or when they would see land again."

    static let cases: [(utterance: String, voice: String, bargesIn: Bool, path: String, silero: Bool)] = [
        ("uh huh", "en-us", false, "/ws", false), ("uh huh", "en-gb+f3", false, "/ws", false),
        ("stop", "en-us", true, "/ws", false), ("stop", "en-gb+f3", true, "/ws", false),
        ("wait, actually I meant Paris", "en-us", true, "/ws", false), ("wait, actually I meant Paris", "en-gb+f3", true, "/ws", false),
        // The Realtime API's own endpoint: the same decisions, and none of Parley's events (the SDKs listen there).
        ("uh huh", "en-us", false, "/v1/realtime", false), ("stop", "en-gb+f3", true, "/v1/realtime", false),
        // The same decisions with the server's default detector, Silero, whose onset and ends are
        // its 32 ms windows' rather than the energy detector's 10 ms frames.
        ("uh huh", "en-us", false, "/ws", true), ("uh huh", "en-gb+f3", false, "/ws", true),
        ("stop", "en-us", true, "/ws", true), ("wait, actually I meant Paris", "en-gb+f3", true, "/ws", true),
    ]

    /// A server whose agent tells `story`, heard by pocketsphinx and the energy detector or Silero,
    /// spoken by espeak-ng; the pool is the caller's to stop.
    static func storyServer(silero: Bool, recordings: Recordings? = nil, replyLeadMs: Int = SpeechServices().replyLeadMs,
                            clock: ManualClock? = nil, transcriber: (any Transcriber)? = nil) throws -> (TestServer, WorkerPool) {
        let pool = try WorkerPool(name: "test-speech", threads: 2, queueLimit: 64)
        var vad: (any VoiceActivityModel)?
        if silero {
            let model: SileroVAD = try #require(SileroVADTests.shared, "Silero VAD is not installed: run scripts/tools/speech-models.sh (make test does)")
            vad = model
        }
        var speech = SpeechServices(transcriber: try transcriber ?? SphinxTranscriber(decoders: 2, pool: pool), synthesizer: EspeakSynthesizer(pool: pool), pool: pool,
                                    voiceActivity: vad)
        speech.replyLeadMs = replyLeadMs
        let server = try TestServer(clock: clock, routes: { routes in
            RealtimeEndpoint(model: FixedReplyModel(reply: Self.story), modelName: "test", speech: speech, recordings: recordings).install(on: &routes)
        })
        return (server, pool)
    }

    @Test(arguments: Self.cases)
    func speechOneSecondIntoAReply(utterance: String, voice: String, bargesIn: Bool, path: String, silero: Bool) throws {
        let clock = ManualClock()
        let (server, pool) = try Self.storyServer(silero: silero, clock: clock)
        defer { pool.stop() }
        try Self.speak(utterance, in: voice, bargesIn: bargesIn, path: path, server: server, clock: clock)
    }

    /// Hums that Whisper tiny.en writes as ordinary words ("And then them.", "and making it."),
    /// which cut the reply before the decode's confidence was weighed, and real interruptions:
    /// heard by a real speech helper's Whisper, on the test's clock. A voice is espeak-ng's name or
    /// `flite:` and flite's. Not here: the hums whose decodes sit at the rule's thresholds, whose
    /// outcome moves with where a partial cuts them ("uh huh" in flite's awb, heard "No, no, no."
    /// at -0.73 one run and -0.78 the next); docs/benchmarks.md counts them ("Backchannels and the
    /// decode's confidence").
    static let whisperCases: [(utterance: String, voice: String, bargesIn: Bool)] = [
        ("mm hmm", "en-gb+f3", false), ("mm hmm", "en+m3", false), ("mhm", "en-us", false), ("uh huh", "flite:rms", false),
        ("stop", "en-us", true), ("hold on a second", "en-us", true), ("can you say that again", "en+m3", true),
    ]

    /// A helper of the suite's own, Whisper alone: a periodic partial is decoded only while the
    /// helper has no other decode of this process in flight (`WhisperTranscriber.partialsInFlight`),
    /// so on a helper other suites share, which cuts of the speech the partials read (and the words
    /// they write) would move with those suites' load. Here they move only with this suite's one
    /// session, on the test's clock.
    static let whisperHelper = RunningSpeechHelper(["--whisper", ".venv-speech/whisper-tiny.en"], workers: 1)

    @Test(arguments: Self.whisperCases)
    func whisperWeighsWhatItHeardOverAReply(utterance: String, voice: String, bargesIn: Bool) throws {
        let helper = try #require(Self.whisperHelper, "the speech helper did not start: run scripts/tools/speech-models.sh (make test does)")
        let clock = ManualClock()
        let (server, pool) = try Self.storyServer(silero: true, clock: clock, transcriber: WhisperTranscriber(helper: helper.status))
        defer { pool.stop() }
        try Self.speak(utterance, in: voice, bargesIn: bargesIn, path: "/ws", server: server, clock: clock)
    }

    static func speak(_ utterance: String, in voice: String, bargesIn: Bool, path: String, server: TestServer, clock: ManualClock) throws {
        let talk = try ClockedConversation(server: server, clock: clock, path: path)
        try talk.advance(until: "session.created", withinMs: 1_000)
        // /ws hears Opus by default; this listener streams pcm16 as the Realtime API carries it.
        // /v1/realtime answers in text unless asked for audio.
        try talk.send(path == "/ws" ? #"{"type":"session.update","session":{"input_audio_format":"pcm16"}}"#
            : #"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"]}}"#)
        try talk.advance(until: "session.updated", withinMs: 1_000)
        // The microphone is open before the reply: the detector learns the quiet.
        try talk.stream([Int16](repeating: 0, count: 24_000), chunkMs: 100)
        try talk.send(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"Tell me a story about the sea."}]}}"#)
        try talk.send(#"{"type":"response.create"}"#)
        // The reply's first audio: an Opus packet on /ws, a pcm16 delta on /v1/realtime.
        var waited = 0
        while talk.binary.isEmpty && !talk.types.contains("response.output_audio.delta") {
            guard waited < 10_000 else { throw ClockedConversation.Stalled(description: "no reply audio within 10 s: \(talk.types)") }
            try talk.advance(milliseconds: 20)
            waited += 20
        }
        // One second into the reply, the listener speaks (then stays quiet, as a microphone does).
        try talk.advance(milliseconds: 800)
        let wav = try WAVFile.read(path: voice.hasPrefix("flite:") ? try SpeechVectors.flite(utterance, voice: String(voice.dropFirst(6)))
                                                                   : try SpeechVectors.wav(utterance, voice: voice))
        let said = try Resampler(from: wav.sampleRate, to: 24_000).process(wav.samples)
        try talk.stream([Int16](repeating: 0, count: 4_800) + said + [Int16](repeating: 0, count: 36_000), chunkMs: 100)
        try talk.advance(until: "response.done", withinMs: 60_000)
        let types = talk.types
        let events = Array(talk.events.prefix { $0["type"]?.string != "response.done" })
        // Opus packets of 20 ms on /ws, pcm16 deltas of 100 ms on /v1/realtime.
        let sentMs = path == "/ws" ? talk.binary.count * 20 : types.filter { $0 == "response.output_audio.delta" }.count * 100
        let done = talk.events.first { $0["type"]?.string == "response.done" }?["response"]
        if bargesIn {
            #expect(done?["status"]?.string == "cancelled", "\(utterance) (\(voice)): \(types)")
            #expect(done?["status_details"]?["reason"]?.string == "turn_detected")
            #expect(types.contains("input_audio_buffer.speech_started"))
            #expect(!types.contains("parley.response.paused") || path == "/ws")
            let truncated = try talk.advance(until: "conversation.item.truncated", withinMs: 5_000)
            let heard = truncated["audio_end_ms"]?.int ?? -1
            #expect(heard > 500 && heard < 4_000, "heard \(heard) ms")
        } else {
            let types = events.map { $0["type"]?.string ?? "?" }
            #expect(done?["status"]?.string == "completed", "\(utterance) (\(voice)): \(types)")
            // No event at all for the backchannel: no turn began, none was committed.
            #expect(!types.contains("input_audio_buffer.speech_started") && !types.contains("input_audio_buffer.committed"), "\(types)")
            // On /ws, Parley's own pair tells the page the agent paused and went on; never on /v1/realtime.
            let parleys = types.contains("parley.response.paused") && types.contains("parley.response.resumed")
            #expect(parleys == (path == "/ws"), "\(types)")
            // The whole reply was sent: about 0.4 s a word at espeak-ng's pace, in 20 ms packets.
            #expect(sentMs > Self.story.split(separator: " ").count * 250, "\(sentMs) ms of audio")
            #expect((server.metric("parley_replies_paused_total") ?? 0) >= 1)
        }
    }
}
