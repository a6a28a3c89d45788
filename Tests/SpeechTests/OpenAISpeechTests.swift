import Codec
import JSON
@testable import Models
import Server
import Session
@testable import Speech
import Testing
import TestSupport
import Loop
import MockLLM
import Upstream
#if canImport(Glibc)
import Glibc
@testable import SpeechContracts
#endif

/// The `openai` speech providers against `parley mock-llm`'s speech routes over real sockets: the
/// turn's audio uploaded as a WAV in a multipart form, the reply's speech streamed back as pcm.
@Suite(.serialized) struct OpenAISpeechTests {
    static let transcript = "what is the weather like in Paris"

    /// One server with the mock's routes and the sessions, whose providers call the server itself.
    func server(mockTranscript: String = Self.transcript) throws -> (TestServer, WorkerPool) {
        let pool = try WorkerPool(name: "test-speech", threads: 1, queueLimit: 16)
        let box = SpeechBox()
        let server = try TestServer({ $0.loops = 1 }, routes: { routes in
            MockSpeechRoutes.install(on: &routes, transcript: mockTranscript)
            RealtimeEndpoint(model: FixedReplyModel(reply: "It is sunny. Take a hat."), modelName: "test",
                             speech: SpeechServices(transcriber: box, synthesizer: box, pool: pool)).install(on: &routes)
        })
        let base = UpstreamURL("http://127.0.0.1:\(server.port)/v1")!
        box.set(OpenAITranscriber(baseURL: base, model: "whisper-1", apiKey: "k"), OpenAISynthesizer(baseURL: base, model: "tts-1", apiKey: "k"))
        return (server, pool)
    }

    @Test func aSpokenTurnIsUploadedAndTheReplyIsSpokenThroughTheAPI() throws {
        let (server, pool) = try server()
        defer { pool.stop() }
        let client = try server.client()
        #expect(try client.upgrade(path: "/ws").status == 101)
        _ = try client.readFrame()
        let file = try OggOpusFile.read(path: try SpeechVectors.opus("What is the weather like in Paris"))
        let silence = try OpusEncoder().encode([Int16](repeating: 0, count: 960))
        for packet in file.packets + Array(repeating: silence, count: 60) { try client.send(TestClient.frame(0x2, packet)) }
        let (events, packets) = try client.readEvents(until: "response.done")
        let completed = events.first { $0["type"]?.string == "conversation.item.input_audio_transcription.completed" }
        #expect(completed?["transcript"]?.string == Self.transcript)
        #expect(events.last?["response"]?["status"]?.string == "completed")
        // "It is sunny." and "Take a hat.": 6 words at 0.3 s each from the mock.
        let decoder = try OpusDecoder(format: AudioFormat(sampleRate: .hz24000, channels: .mono))
        var pcm: [Int16] = []
        for packet in packets { pcm += try decoder.decode(packet) }
        let seconds = Double(pcm.count) / 24_000
        #expect(seconds >= 1.8 && seconds <= 2.0, "\(seconds) s")
    }

    /// A telephone turn is uploaded at the rate it was heard at, 8 kHz: the API resamples what it
    /// needs, and upsampling here would double the upload for nothing.
    @Test func aTurnIsUploadedAsAWAVAtItsOwnRate() throws {
        let transcriber = OpenAITranscriber(baseURL: UpstreamURL("http://127.0.0.1:9/v1")!, model: "m", apiKey: nil)
        let samples = (0..<800).map { Int16($0) }
        let body = transcriber.request(samples, sampleRate: 8000, choice: TranscriptionChoice()).body
        let riff = try #require(body.indices.first { body[$0...].starts(with: Array("RIFF".utf8)) })
        let length = 44 + samples.count * 2
        let wav = try WAVFile(bytes: Array(body[riff..<(riff + length)]))
        #expect(wav == WAVFile(sampleRate: 8000, channels: 1, samples: samples))
    }

    /// A session's model and language go upstream as it named them (the API knows its own names).
    @Test func theSessionsModelAndLanguageGoUpstream() throws {
        let transcriber = OpenAITranscriber(baseURL: UpstreamURL("http://127.0.0.1:9/v1")!, model: "gpt-4o-mini-transcribe", apiKey: nil)
        func form(_ choice: TranscriptionChoice) -> String {
            String(decoding: transcriber.request([0, 1], sampleRate: 16_000, choice: choice).body.prefix(400), as: UTF8.self)
        }
        let chosen = form(TranscriptionChoice(model: "whisper-1", language: "es"))
        #expect(chosen.contains("name=\"model\"\r\n\r\nwhisper-1\r\n") && chosen.contains("name=\"language\"\r\n\r\nes\r\n"))
        let server = form(TranscriptionChoice())
        #expect(server.contains("name=\"model\"\r\n\r\ngpt-4o-mini-transcribe\r\n") && !server.contains("name=\"language\""))
        #expect(transcriber.model(for: TranscriptionChoice(model: "whisper-1")) == "whisper-1")
    }

    @Test func anUnreachableTranscriptionAPIFailsTheTurnWithItsReason() throws {
        let pool = try WorkerPool(name: "test-speech", threads: 1, queueLimit: 16)
        defer { pool.stop() }
        let dead = UpstreamURL("http://127.0.0.1:9/v1")!
        let server = try TestServer({ $0.loops = 1 }, routes: { routes in
            RealtimeEndpoint(model: FixedReplyModel(reply: "Hello."), modelName: "test",
                             speech: SpeechServices(transcriber: OpenAITranscriber(baseURL: dead, model: "m", apiKey: nil), pool: pool)).install(on: &routes)
        })
        let client = try server.client()
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        _ = try client.readFrame()
        let wav = try WAVFile.read(path: try SpeechVectors.wav("What is the weather like in Paris"))
        let audio = try Resampler(from: wav.sampleRate, to: 24_000).process(wav.samples) + [Int16](repeating: 0, count: 24_000)
        for start in stride(from: 0, to: audio.count, by: 4_800) {
            let chunk = Array(audio[start..<min(audio.count, start + 4_800)])
            try client.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.append","audio":"\#(Base64.encode(PCM.littleEndianBytes(chunk)))"}"#.utf8)))
        }
        var failed: JSON?
        while failed == nil {
            let event = try JSON(parsing: String(decoding: try client.readFrame().payload, as: UTF8.self))
            if event["type"]?.string == "conversation.item.input_audio_transcription.failed" { failed = event }
        }
        #expect(failed?["error"]?["code"]?.string == "transcription_failed")
        #expect(failed?["error"]?["message"]?.string?.hasPrefix("127.0.0.1: ") == true, "\(failed?["error"]?["message"]?.string ?? "")")
    }
}

/// Providers chosen after the server is up, so they can call the server's own port.
final class SpeechBox: Transcriber, Synthesizer, @unchecked Sendable {
    let name = "box"
    private var transcriber: (any Transcriber)?
    private var synthesizer: (any Synthesizer)?

    func set(_ transcriber: any Transcriber, _ synthesizer: any Synthesizer) {
        self.transcriber = transcriber
        self.synthesizer = synthesizer
    }

    func begin(on loop: EventLoop, sampleRate: Int, choice: TranscriptionChoice, _ onEvent: @escaping (TranscriptionEvent) -> Void) -> any TranscriptionSession {
        transcriber!.begin(on: loop, sampleRate: sampleRate, choice: choice, onEvent)
    }

    func speak(_ text: String, voice: SpeechVoice, urgency: SynthesisUrgency, on loop: EventLoop, _ onEvent: @escaping (SynthesisEvent) -> Void) -> any ModelCall {
        synthesizer!.speak(text, voice: voice, urgency: urgency, on: loop, onEvent)
    }
}
