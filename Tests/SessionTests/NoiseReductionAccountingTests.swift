import Codec
import JSON
@testable import Models
import Server
import Session
import Testing
import TestSupport

/// The denoiser a session's `noise_reduction` makes is in its connection's memory account while
/// it is on, and leaves it when turned off.
@Suite struct NoiseReductionAccountingTests {
    func appendAndCommit(_ client: TestClient) throws {
        // A second of pcm16 at 24 kHz (a quiet tone: what it is does not matter here).
        let samples = (0..<24_000).map { Int16(truncatingIfNeeded: ($0 % 48) * 40 - 960) }
        let audio = Base64.encode(PCM.littleEndianBytes(samples))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.append","audio":"\#(audio)"}"#.utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.commit"}"#.utf8)))
        _ = try client.readEvents(until: "input_audio_buffer.committed")
    }

    @Test func theDenoiserIsAccountedWhileOn() throws {
        let server = try TestServer({ $0.loops = 1 }, routes: { routes in
            RealtimeEndpoint(model: BuiltinModel(wordInterval: 0.001), modelName: "test").install(on: &routes)
        })
        let client = try server.client()
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        _ = try client.readEvents(until: "session.created")
        let update = #"{"type":"session.update","session":{"audio":{"input":{"turn_detection":null,"noise_reduction":"#
        try client.send(TestClient.frame(0x1, Array((update + #"null}}}}"#).utf8)))
        _ = try client.readEvents(until: "session.updated")
        try appendAndCommit(client)
        let without = try #require(server.metric("parley_accounted_bytes"))

        try client.send(TestClient.frame(0x1, Array((update + #"{"type":"near_field"}}}}}"#).utf8)))
        _ = try client.readEvents(until: "session.updated")
        try appendAndCommit(client)
        let with = try #require(server.metric("parley_accounted_bytes"))
        // libspeexdsp's preprocessor at 16 kHz: 47,072 bytes measured (Denoiser.stateBytes).
        #expect(with - without >= 47_000 && with - without <= 50_000, "\(without) → \(with)")

        try client.send(TestClient.frame(0x1, Array((update + #"null}}}}"#).utf8)))
        _ = try client.readEvents(until: "session.updated")
        try appendAndCommit(client)
        let after = try #require(server.metric("parley_accounted_bytes"))
        #expect(abs(after - without) < 2_000, "\(without) → \(with) → \(after)")
    }
}
