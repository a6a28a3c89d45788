import Glibc
import Testing
import TestSupport

/// A server at its speech capacity refuses a new voice session with 503 `server_busy` and
/// Retry-After, and takes one again when a session ends; its other sessions go on.
@Suite struct SpeechCapacityTests {
    @Test func pastTheCapacityANewSessionIsRefusedUntilOneEnds() throws {
        let server = try ServerProcess(arguments: "--speech-capacity 2 --synthesizer none")
        var open: [TestClient] = []
        for _ in 0..<2 {
            let client = try TestClient(port: server.port)
            #expect(try client.upgrade(path: "/v1/realtime").status == 101)
            _ = try client.readEvents(until: "session.created")
            open.append(client)
        }
        let refused = try TestClient(port: server.port).upgradeResponse(path: "/v1/realtime")
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "5")
        #expect(refused.body.contains("\"code\":\"server_busy\""), "\(refused.body)")
        // The sessions admitted go on.
        try open[0].send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":{"type":"realtime","instructions":"Be brief."}}"#.utf8)))
        _ = try open[0].readEvents(until: "session.updated")
        // One ends: its seat is free again.
        open.removeLast().hangUp()
        var admitted = false
        for _ in 0..<50 where !admitted {
            let client = try TestClient(port: server.port)
            admitted = try client.upgrade(path: "/v1/realtime").status == 101
            if !admitted { usleep(100_000) }
        }
        #expect(admitted, "no seat was given back")
    }
}
