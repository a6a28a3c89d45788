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
import SessionEngine
#endif

/// Spoken replies end to end: a spoken sentence (espeak-ng, then opusenc) in, and the built-in
/// agent's answer back as speech, Opus on /ws and pcm16 on /v1/realtime, decoded here to check
/// that it is speech of a plausible length.
@Suite(.serialized) struct SpokenReplyTests {
    static let sentence = "What is the weather like in Paris"

    /// `reply`: what the model says, in a few deltas (short, so that speaking it takes little time).
    func server(reply: String = "It is sunny in Paris today. Take a light jacket anyway.") throws -> (TestServer, WorkerPool) {
        let pool = try WorkerPool(name: "test-speech", threads: 2, queueLimit: 64)
        let speech = SpeechServices(transcriber: try SphinxTranscriber(decoders: 2, pool: pool), synthesizer: EspeakSynthesizer(pool: pool), pool: pool)
        let server = try TestServer({ $0.loops = 1 }, routes: { routes in
            RealtimeEndpoint(model: FixedReplyModel(reply: reply), modelName: "test", speech: speech).install(on: &routes)
        })
        return (server, pool)
    }

    func read(until last: String, _ client: TestClient) throws -> (events: [JSON], binary: [[UInt8]]) {
        try client.readEvents(until: last)
    }

    func spokenPackets() throws -> [[UInt8]] {
        let file = try OggOpusFile.read(path: try SpeechVectors.opus(Self.sentence))
        let silence = try OpusEncoder().encode([Int16](repeating: 0, count: 960))
        return file.packets + Array(repeating: silence, count: 60)
    }

    /// Speech is at least this loud somewhere and lasts about as long as the words need.
    func expectSpeech(_ pcm: [Int16], rate: Int, words: Int) {
        let seconds = Double(pcm.count) / Double(rate)
        // espeak-ng at 165 words a minute: about 0.36 s a word, allowing for pauses.
        #expect(seconds > Double(words) * 0.2 && seconds < Double(words) * 0.8 + 2, "\(seconds) s for \(words) words")
        #expect(PCM.dBFS(pcm) > -40, "level \(PCM.dBFS(pcm)) dBFS")
    }

    @Test func aSpokenQuestionOnWsIsAnsweredInOpus() throws {
        let (server, pool) = try server()
        defer { pool.stop() }
        let client = try server.client(timeoutSeconds: TestServer.speechReadSeconds)
        #expect(try client.upgrade(path: "/ws").status == 101)
        let created = try read(until: "session.created", client).events[0]
        #expect(created["session"]?["output_modalities"]?.array?.first?.string == "audio")
        for packet in try spokenPackets() {
            try client.send(TestClient.frame(0x2, packet))
            usleep(20_000)
        }
        let (events, packets) = try read(until: "response.done", client)
        let types = events.map { $0["type"]?.string ?? "?" }
        #expect(types.contains("conversation.item.input_audio_transcription.completed"))
        #expect(types.contains("response.output_audio.done"), "events: \(types)")
        #expect(events.last?["response"]?["status"]?.string == "completed")
        let transcript = events.compactMap { $0["type"]?.string == "response.output_audio_transcript.done" ? $0["transcript"]?.string : nil }.first ?? ""
        let decoder = try OpusDecoder(format: AudioFormat(sampleRate: .hz24000, channels: .mono))
        var pcm: [Int16] = []
        for packet in packets { pcm += try decoder.decode(packet) }
        #expect(packets.count > 20)
        expectSpeech(pcm, rate: 24_000, words: transcript.split(separator: " ").count)
        #expect((server.metric("parley_voice_to_voice_seconds_count") ?? 0) >= 1)  // process-wide: other suites add to it
        #expect((server.metric("parley_speech_synthesis_real_time_factor_count") ?? 0) >= 1)
        // The turn's stages, from the last word to the first Opus frame (process-wide counts; that
        // each turn's stages add up to its total is TurnTimelineTests').
        for stage in ["end_of_turn", "transcription", "model_request", "first_token", "first_sentence", "synthesis", "first_frame", "total"] {
            #expect((server.metric("parley_turn_stage_seconds_count{stage=\"\(stage)\"}") ?? 0) >= 1, "\(stage)")
        }
        // Not asked for, never sent.
        #expect(!types.contains("parley.turn.timeline"))
    }

    /// A session whose `include` names `parley.turn.timeline` gets each turn's stages, in order,
    /// adding up to the total.
    @Test func aSessionThatAsksGetsEachTurnsTimeline() throws {
        let (server, pool) = try server()
        defer { pool.stop() }
        let client = try server.client(timeoutSeconds: TestServer.speechReadSeconds)
        #expect(try client.upgrade(path: "/ws").status == 101)
        _ = try read(until: "session.created", client)
        try client.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":{"include":["parley.turn.timeline"]}}"#.utf8)))
        _ = try read(until: "session.updated", client)
        for packet in try spokenPackets() {
            try client.send(TestClient.frame(0x2, packet))
            usleep(20_000)
        }
        let events = try read(until: "parley.turn.timeline", client).events
        let timeline = try #require(events.last)
        let stopped = events.first { $0["type"]?.string == "input_audio_buffer.speech_stopped" }
        #expect(timeline["item_id"]?.string == stopped?["item_id"]?.string)
        let stages = timeline["stages_ms"]?.object ?? []
        #expect(stages.map(\.0) == ["end_of_turn", "transcription", "model_request", "first_token", "first_sentence", "synthesis", "first_frame", "total"], "\(stages)")
        let parts = stages.dropLast().compactMap { $0.1.int }.reduce(0, +)
        let total = stages.last?.1.int ?? -1
        // Each stage is rounded to a millisecond on its own.
        #expect(abs(parts - total) <= 7, "\(stages)")
        #expect(stages.allSatisfy { ($0.1.int ?? -1) >= 0 })
    }

    @Test func theRealtimeEndpointAnswersInPCM16WhenAskedForAudio() throws {
        let (server, pool) = try server()
        defer { pool.stop() }
        let client = try server.client(timeoutSeconds: TestServer.speechReadSeconds)
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        _ = try read(until: "session.created", client)
        try client.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"]}}"#.utf8)))
        _ = try read(until: "session.updated", client)
        // The same spoken sentence, as the Realtime API carries it: pcm16 at 24 kHz in base64.
        let wav = try WAVFile.read(path: try SpeechVectors.wav(Self.sentence))
        let audio = try Resampler(from: wav.sampleRate, to: 24_000).process(wav.samples) + [Int16](repeating: 0, count: 24_000)
        for start in stride(from: 0, to: audio.count, by: 2_400) {
            let chunk = Array(audio[start..<min(audio.count, start + 2_400)])
            let event = #"{"type":"input_audio_buffer.append","audio":"\#(Base64.encode(PCM.littleEndianBytes(chunk)))"}"#
            try client.send(TestClient.frame(0x1, Array(event.utf8)))
        }
        let (events, _) = try read(until: "response.done", client)
        let completed = events.first { $0["type"]?.string == "conversation.item.input_audio_transcription.completed" }
        #expect(completed?["transcript"]?.string?.contains("weather") == true, "heard \(completed?["transcript"]?.string ?? "nothing")")
        var bytes: [UInt8] = []
        for event in events where event["type"]?.string == "response.output_audio.delta" {
            bytes += Base64.decode(Array((event["delta"]?.string ?? "").utf8)) ?? []
        }
        let pcm = stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
        let transcript = events.compactMap { $0["type"]?.string == "response.output_audio_transcript.done" ? $0["transcript"]?.string : nil }.first ?? ""
        expectSpeech(pcm, rate: 24_000, words: transcript.split(separator: " ").count)
        #expect(events.last?["response"]?["status"]?.string == "completed")
    }

    /// The telephone's formats both ways, in each dialect: G.711 speech in (heard at 8 kHz,
    /// recognised by pocketsphinx through its resampler, from the telephone band's cepstral mean:
    /// without it this first turn comes back as "well when you"), and the reply back as G.711
    /// deltas of 20 ms, 160 bytes each, made at 8 kHz.
    @Test(arguments: [(Dialect.ga, G711.Law.muLaw), (.beta, .aLaw)])
    func theRealtimeEndpointHearsAndSpeaksG711(dialect: Dialect, law: G711.Law) throws {
        let (server, pool) = try server()
        defer { pool.stop() }
        let client = try server.client(timeoutSeconds: TestServer.speechReadSeconds)
        let ga = dialect == .ga
        #expect(try client.upgrade(path: "/v1/realtime", extraHeaders: ga ? "" : "OpenAI-Beta: realtime=v1\r\n").status == 101)
        _ = try read(until: "session.created", client)
        let type = law == .muLaw ? "audio/pcmu" : "audio/pcma"
        let update = ga
            ? #"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"],"audio":{"input":{"format":{"type":"\#(type)"}},"output":{"format":{"type":"\#(type)"}}}}}"#
            : #"{"type":"session.update","session":{"modalities":["text","audio"],"input_audio_format":"g711_alaw","output_audio_format":"g711_alaw"}}"#
        try client.send(TestClient.frame(0x1, Array(update.utf8)))
        let updated = try read(until: "session.updated", client).events.last
        let format = ga ? updated?["session"]?["audio"]?["output"]?["format"]?["type"]?.string : updated?["session"]?["output_audio_format"]?.string
        #expect(format == (ga ? type : "g711_alaw"))
        let wav = try WAVFile.read(path: try SpeechVectors.wav(Self.sentence))
        let audio = try Resampler(from: wav.sampleRate, to: 8000).process(wav.samples) + [Int16](repeating: 0, count: 8000)
        for start in stride(from: 0, to: audio.count, by: 160) {
            let chunk = G711.encode(Array(audio[start..<min(audio.count, start + 160)]), law)
            try client.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.append","audio":"\#(Base64.encode(chunk))"}"#.utf8)))
        }
        let (events, _) = try read(until: "response.done", client)
        let completed = events.first { $0["type"]?.string == "conversation.item.input_audio_transcription.completed" }
        #expect(completed?["transcript"]?.string?.contains("weather") == true, "heard \(completed?["transcript"]?.string ?? "nothing")")
        let deltas = events.filter { $0["type"]?.string == (ga ? "response.output_audio.delta" : "response.audio.delta") }
            .map { Base64.decode(Array(($0["delta"]?.string ?? "").utf8)) ?? [] }
        #expect(!deltas.isEmpty && deltas.allSatisfy { $0.count == 160 }, "delta sizes \(Set(deltas.map(\.count)))")
        let transcript = events.compactMap { $0["type"]?.string?.hasSuffix("audio_transcript.done") == true ? $0["transcript"]?.string : nil }.first ?? ""
        expectSpeech(G711.decode(deltas.flatMap { $0 }, law), rate: 8000, words: transcript.split(separator: " ").count)
        #expect(events.last?["response"]?["status"]?.string == "completed")
    }

    @Test func cancellingASpokenReplyTellsHowMuchWasPlayed() throws {
        let (server, pool) = try server(reply: "Once upon a time, a small boat left the harbour at dawn. The sea was calm and grey. "
                                        + "Nobody on board knew how far the wind would carry them, or when they would see land again.")
        defer { pool.stop() }
        let client = try server.client(timeoutSeconds: TestServer.speechReadSeconds)
        #expect(try client.upgrade(path: "/ws").status == 101)
        _ = try read(until: "session.created", client)
        try client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"Tell me a long story about the sea."}]}}"#.utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        // Some audio arrives; then the user cancels, as a barge-in would.
        var audioFrames = 0
        while audioFrames < 5 {
            let frame = try client.readFrame()
            if frame.opcode == 0x2 { audioFrames += 1 }
        }
        usleep(300_000)
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.cancel"}"#.utf8)))
        let (events, _) = try read(until: "conversation.item.truncated", client)
        let done = try #require(events.first { $0["type"]?.string == "response.done" })
        #expect(done["response"]?["status"]?.string == "cancelled")
        let played = events.last?["audio_end_ms"]?.int ?? -1
        #expect(played >= 100 && played < 2_000, "played \(played) ms")
        // The history keeps what was heard: the first words of the story, not the whole text the
        // model had already written.
        let itemID = events.last?["item_id"]?.string ?? ""
        try client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.retrieve","item_id":"\#(itemID)"}"#.utf8)))
        let (retrieved, _) = try read(until: "conversation.item.retrieved", client)
        let heard = retrieved.last?["item"]?["content"]?.array?.first?["transcript"]?.string ?? "?"
        #expect("Once upon a time, a small boat left the harbour at dawn.".hasPrefix(heard), "heard \(heard)")
    }
}

/// A model that says `reply` at once, word by word: the spoken-reply tests need its words, not an
/// agent's.
struct FixedReplyModel: LanguageModel {
    let name = "fixed"
    let reply: String

    func stream(_ request: ModelRequest, on loop: EventLoop, _ onEvent: @escaping (ModelEvent) -> Void) -> any ModelCall {
        let call = FixedCall()
        let words = reply.split(separator: " ", omittingEmptySubsequences: true).enumerated().map { $0.offset == 0 ? String($0.element) : " " + $0.element }
        loop.schedule(after: 0.001) {
            for word in words where !call.cancelled { onEvent(.delta(word)) }
            if !call.cancelled { onEvent(.finished(nil, reason: .stop)) }
        }
        return call
    }

    final class FixedCall: ModelCall {
        var cancelled = false
        func cancel() { cancelled = true }
    }
}
