import Loop
import JSON
@testable import Models
import Server
@testable import Session
import Testing
import TestSupport
@testable import SessionEngine

/// What a session may spend: events a second, audio pace, length. Past a limit: an `error` event
/// naming it, close 1008, and the server goes on.
@Suite struct SessionLimitTests {
    @Test func theEventBucketAllowsABurstThenTheRate() {
        var limits = SessionLimits()
        limits.eventsPerSecond = 10
        var budget = SessionBudget(limits: limits, now: 0)
        var burst: [Bool] = []
        for _ in 0..<20 { burst.append(budget.event(at: 0, limits: limits)) }
        #expect(burst.allSatisfy { $0 }, "a two-second burst")
        let over = budget.event(at: 0, limits: limits)
        let refilled = budget.event(at: 100_000_000, limits: limits)
        let againOver = budget.event(at: 100_000_000, limits: limits)
        #expect(!over)
        #expect(refilled, "a tenth of a second refills one")
        #expect(!againOver)
    }

    @Test func audioMayRunAheadOfRealTimeOnlySoFar() {
        let limits = SessionLimits()
        var budget = SessionBudget(limits: limits, now: 0)
        let frame: UInt64 = 20_000_000
        // Real time: 50 frames a second for ten seconds.
        var steady: [Bool] = []
        for i in 0..<500 { steady.append(budget.audio(frame, at: UInt64(i) * frame, limits: limits)) }
        #expect(steady.allSatisfy { $0 })
        // Three times real time for long enough passes 1.5x and the 30 s allowance.
        var fast = SessionBudget(limits: limits, now: 0)
        var verdicts: [Bool] = []
        for i in 0..<4000 { verdicts.append(fast.audio(frame, at: UInt64(i) * frame / 3, limits: limits)) }
        #expect(verdicts.prefix(1500).allSatisfy { $0 } && verdicts.contains(false))
    }

    func server(_ adjust: (inout SessionLimits) -> Void) throws -> TestServer {
        var limits = SessionLimits()
        adjust(&limits)
        return try TestServer({ $0.loops = 1 }, routes: { routes in
            RealtimeEndpoint(model: BuiltinModel(wordInterval: 0.001), modelName: "m", limits: limits).install(on: &routes)
        })
    }

    @Test func tooManyEventsCloseTheSessionWith1008() throws {
        let server = try server { $0.eventsPerSecond = 5 }
        let client = try server.client()
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        _ = try client.readEvent()
        for _ in 0..<30 { try client.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.clear"}"#.utf8))) }
        var sawLimit = false
        while let frame = try? client.readFrame(), frame.opcode != 0x8 {
            if let event = try? JSON(parsing: String(decoding: frame.payload, as: UTF8.self)), event["error"]?["code"]?.string == "rate_limit_exceeded" { sawLimit = true }
        }
        #expect(sawLimit)
        #expect(server.metric("parley_connections_open{endpoint=\"realtime\"}", becomes: 0))
        // The server goes on.
        #expect(try server.client().upgrade(path: "/v1/realtime").status == 101)
    }

    @Test func aSessionPastItsLengthIsToldAndClosed() throws {
        let server = try server { $0.maxSessionSeconds = 0.3 }
        let client = try server.client()
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        _ = try client.readEvent()
        let error = try client.readEvent()
        #expect(error["error"]?["code"]?.string == "session_expired")
        #expect(try client.readClose() == 1008)
    }

    @Test func audioStreamedFarFasterThanRealTimeIsRefused() throws {
        let server = try server { _ in }
        let client = try server.client()
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        _ = try client.readEvent()
        // A second of silence, sent 40 times at once: forty seconds of audio in a moment.
        let chunk = Base64.encode([UInt8](repeating: 0, count: 48000))
        for _ in 0..<40 {
            try client.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.append","audio":"\#(chunk)"}"#.utf8)))
        }
        var code: String?
        while let frame = try? client.readFrame(), frame.opcode != 0x8 {
            if let event = try? JSON(parsing: String(decoding: frame.payload, as: UTF8.self)), let c = event["error"]?["code"]?.string { code = c }
        }
        #expect(code == "audio_too_fast")
    }
}
