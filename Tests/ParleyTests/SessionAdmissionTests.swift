import Glibc
import Testing
import TestSupport

/// Speech capacity is spent by talking, not by opening a session (issue 49): `parley serve` with
/// its default speech (the helper with Whisper, Piper and Smart Turn; Silero in-process) opens
/// every session that sends no audio, and a tenant's cap across workers answers its own 429,
/// never a speech refusal. (The helper's count of speech work and its `load` are
/// SpeechHelperContractTests'; `/readyz`'s answer to it ReadinessTests'.)
@Suite(.serialized) struct SessionAdmissionTests {
    /// Before: the eleventh was refused 503 `server_busy` (10 seats on two cores, taken at open).
    @Test func twoThousandSessionsThatSendNoAudioAllOpen() throws {
        // Warnings only: nothing reads the server's output past its listening line, and 2,000
        // sessions' lines at info would fill the pipe and stop its loops.
        let server = try ServerProcess(arguments: "--log-level warning")
        var open: [TestClient] = []
        var refused: [Int] = []
        for _ in 0..<2_000 {
            let client = try TestClient(port: server.port)
            let status = try client.upgrade(path: "/v1/realtime").status
            if status == 101 { open.append(client) } else { refused.append(status) }
        }
        #expect(open.count == 2_000, "\(refused.count) refused, with \(Set(refused).sorted())")
        // Each is a session (its session.created came), and the last one is served.
        for client in open { _ = try client.readEvents(until: "session.created") }
        let last = try #require(open.last)
        try last.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":{"type":"realtime","instructions":"Be brief."}}"#.utf8)))
        _ = try last.readEvents(until: "session.updated")
        let readiness = try TestClient(port: server.port)
        try readiness.send("GET /readyz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        #expect(try readiness.readResponse().status == 200)
    }

    /// Before: 9 opened and 3 got 503, because each of four workers counted its own share of the
    /// speech seats. Now the tenant's count across workers is the only limit a session meets.
    @Test func aTenantCappedAcrossTwoWorkersGets429NotASpeechRefusal() throws {
        let keys = TenantLimitsAcrossProcessesTests.KeysFile()
        let server = try ServerProcess(arguments: "--workers 2 --loops 1 --api-keys \(keys.path) --tenant-max-sessions 10 --log-level warning")
        var statuses: [Int] = []
        var held: [TestClient] = []
        for _ in 0..<12 {
            let (client, answer) = try TenantLimitsAcrossProcessesTests.open(server.port)
            statuses.append(answer.status)
            held.append(client)
        }
        #expect(statuses.filter { $0 == 101 }.count == 10, "\(statuses)")
        #expect(statuses.filter { $0 == 429 }.count == 2, "\(statuses)")
    }
}
