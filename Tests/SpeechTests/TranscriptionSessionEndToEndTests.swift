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

/// Transcription sessions through a real server and the real speech helper (Whisper tiny.en):
/// two voices' sentences streamed with server VAD come back as transcripts, and nothing else;
/// with `noise_reduction` the same over noisy speech.
@Suite(.serialized) struct TranscriptionSessionEndToEndTests {
    static let sentences: [(String, WordErrorRate.Voice)] = [("What time does the museum open", .espeak("en-us", wordsPerMinute: 150)),
                                                             ("Remind me to call my mother tomorrow", .piper(lengthScale: 1.0))]
    /// The helper's server and its way of sending audio.
    let speech = HelperSpeechTests()

    /// `seconds` of quiet at 24 kHz, or of `noise` (uniform white noise of that amplitude).
    static func gap(_ seconds: Double, noise: Double, _ random: inout SeededRandom) -> [Int16] {
        (0..<Int(seconds * 24_000)).map { _ in noise == 0 ? 0 : Int16(Double.random(in: -noise...noise, using: &random).rounded()) }
    }

    /// The two sentences, each after a second of quiet, and a last 1.5 s; with `snrDB`, white
    /// noise that far under the speech over the whole stream.
    func stream(snrDB: Double? = nil) throws -> [Int16] {
        let clips = try Self.sentences.map { try $0.1.say($0.0) }
        var random = SeededRandom(seed: 7)
        let noise = snrDB.map { db in
            let rms = PCM.rms(clips.flatMap { $0 }) * 32768 * pow(10, -db / 20)
            return rms * 3.0.squareRoot()
        } ?? 0
        var out: [Int16] = []
        for clip in clips {
            out += Self.gap(1, noise: noise, &random)
            out += clip.map { Int16(clamping: Int($0) + (noise == 0 ? 0 : Int(Double.random(in: -noise...noise, using: &random)))) }
        }
        return out + Self.gap(1.5, noise: noise, &random)
    }

    /// Opens a transcription session, streams, and reads until both turns' transcripts are in;
    /// then asks for a response, which must be refused. Returns every event and the transcripts.
    func transcribe(_ update: String, samples: [Int16], server: TestServer) throws -> (events: [JSON], transcripts: [String]) {
        let client = try TestClient(port: server.port, timeoutSeconds: 20)
        #expect(try client.upgrade(path: "/v1/realtime?intent=transcription").status == 101)
        let created = try client.readEvents(until: "session.created").events
        #expect(created.last?["session"]?["type"]?.string == "transcription")
        try client.send(TestClient.frame(0x1, Array(update.utf8)))
        let updated = try client.readEvents(until: "session.updated").events
        try CommittedTurn.append(samples, on: client)
        var events = created + updated
        // Each turn's text is decoded on its own, so a short second turn's may come first (the API
        // orders the completions of different items no more than Parley does): they are put back
        // in the order the turns were committed.
        var completed: [String: String] = [:]
        while completed.count < Self.sentences.count {
            let turn = try client.readEvents(until: "conversation.item.input_audio_transcription.completed").events
            events += turn
            if let last = turn.last, let item = last["item_id"]?.string { completed[item] = last["transcript"]?.string ?? "" }
        }
        let committed = events.filter { $0["type"]?.string == "input_audio_buffer.committed" }.compactMap { $0["item_id"]?.string }
        let transcripts = committed.compactMap { completed[$0] }
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create","event_id":"r1"}"#.utf8)))
        let refused = try client.readEvents(until: "error").events
        events += refused
        #expect(refused.last?["error"]?["code"]?.string == "invalid_session_type")
        #expect(refused.last?["error"]?["event_id"]?.string == "r1")
        return (events, transcripts)
    }

    func check(_ transcripts: [String], bound: Double) {
        let reference = Self.sentences.flatMap { WordErrorRate.words($0.0) }
        let heard = transcripts.flatMap { WordErrorRate.words($0) }
        let rate = Double(WordErrorRate.errors(reference, heard)) / Double(reference.count)
        print("transcription session: WER \(rate): \(transcripts)")
        #expect(rate <= bound, "WER \(rate): \(transcripts)")
    }

    @Test func twoVoicesAreTranscribedWithServerVADAndNothingIsAnswered() throws {
        let helper = try #require(HelperSpeechTests.helper, "the speech helper did not start: run scripts/tools/speech-models.sh (make test does)")
        let (server, pool) = try speech.server(helper)
        defer { pool.stop() }
        let (events, transcripts) = try transcribe(#"""
            {"type":"session.update","session":{"type":"transcription","audio":{"input":{"format":{"type":"audio/pcm","rate":24000},
             "transcription":{"model":"whisper-1","language":"en"},"turn_detection":{"type":"server_vad","silence_duration_ms":500}}}}}
            """#, samples: try stream(), server: server)
        let types = events.compactMap { $0["type"]?.string }
        #expect(types.filter { $0 == "input_audio_buffer.speech_started" }.count == 2)
        #expect(types.filter { $0 == "input_audio_buffer.committed" }.count == 2)
        #expect(types.contains("conversation.item.input_audio_transcription.delta"))
        #expect(!types.contains { $0.hasPrefix("response.") }, "\(types)")
        check(transcripts, bound: 0.2)
    }

    @Test func noisySpeechIsStillTranscribedWithNearFieldNoiseReduction() throws {
        let helper = try #require(HelperSpeechTests.helper, "the speech helper did not start: run scripts/tools/speech-models.sh (make test does)")
        let (server, pool) = try speech.server(helper)
        defer { pool.stop() }
        let (events, transcripts) = try transcribe(#"""
            {"type":"session.update","session":{"type":"transcription","audio":{"input":{"noise_reduction":{"type":"near_field"},
             "turn_detection":{"type":"server_vad","silence_duration_ms":500}}}}}
            """#, samples: try stream(snrDB: 10), server: server)
        #expect(events[1]["session"]?["audio"]?["input"]?["noise_reduction"]?["type"]?.string == "near_field")
        #expect(!events.compactMap { $0["type"]?.string }.contains { $0.hasPrefix("response.") })
        check(transcripts, bound: 0.35)
    }

    /// The beta's shape: `transcription_session.created`, `transcription_session.update` answered
    /// with `transcription_session.updated`.
    @Test func theBetaDialectNamesItsEventsForTranscriptionSessions() throws {
        let helper = try #require(HelperSpeechTests.helper, "the speech helper did not start")
        let (server, pool) = try speech.server(helper)
        defer { pool.stop() }
        let client = try TestClient(port: server.port, timeoutSeconds: 20)
        #expect(try client.upgrade(path: "/v1/realtime?intent=transcription", extraHeaders: "OpenAI-Beta: realtime=v1\r\n").status == 101)
        let created = try client.readEvents(until: "transcription_session.created").events
        #expect(created.last?["session"]?["object"]?.string == "realtime.transcription_session")
        try client.send(TestClient.frame(0x1, Array(#"{"type":"transcription_session.update","session":{"input_audio_noise_reduction":{"type":"far_field"},"input_audio_transcription":{"model":"whisper-1"}}}"#.utf8)))
        let updated = try client.readEvents(until: "transcription_session.updated").events
        #expect(updated.last?["session"]?["input_audio_noise_reduction"]?["type"]?.string == "far_field")
    }

    /// A server without a recogniser cannot open one: an error that says why, then 1008.
    @Test func aServerWithoutATranscriberRefusesTheSession() throws {
        let server = try TestServer({ $0.loops = 1 }, routes: { routes in
            RealtimeEndpoint(model: FixedReplyModel(reply: "x"), modelName: "test", speech: SpeechServices()).install(on: &routes)
        })
        let client = try TestClient(port: server.port, timeoutSeconds: 10)
        #expect(try client.upgrade(path: "/v1/realtime?intent=transcription").status == 101)
        let error = try client.readEvent()
        #expect(error["type"]?.string == "error")
        #expect(error["error"]?["code"]?.string == "transcription_unavailable")
        #expect(try client.readClose() == 1008)
    }
}
