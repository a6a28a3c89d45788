import Glibc
import Testing
import TestSupport

/// `parley serve --workers N`: worker processes on one port, a supervisor that restarts them, and
/// one /metrics summed over all of them.
@Suite struct WorkersCommandTests {
    /// /metrics from whichever worker the connection lands on.
    func metrics(_ server: ServerProcess) throws -> String {
        let client = try TestClient(port: server.port)
        try client.send("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n")
        return try client.readResponse().body
    }

    /// Polls /metrics (the other workers' figures are up to 250 ms old) until `condition` holds. A
    /// connection the kernel had queued on a worker that was just killed is reset: that is a retry.
    func eventually(_ server: ServerProcess, _ condition: (String) -> Bool) throws -> String {
        var text = ""
        for _ in 0..<50 {
            if let fresh = try? metrics(server) {
                text = fresh
                if condition(text) { return text }
            }
            usleep(100_000)
        }
        return text
    }

    func value(_ series: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") { return Double(line.dropFirst(series.count + 1)) }
        return nil
    }

    func workerPIDs(_ text: String) -> [Int32] {
        text.split(separator: "\n").filter { $0.hasPrefix("parley_worker_info{") }.compactMap { line in
            line.split(separator: "pid=\"").last.flatMap { Int32($0.prefix { $0.isNumber }) }
        }
    }

    @Test func sessionsSpreadOverTheWorkersAndMetricsAreSummed() throws {
        let server = try ServerProcess(arguments: "--workers 2 --loops 1 --transcriber none --synthesizer none --turn-model none")
        let sessions = try (0..<20).map { _ in try TestClient(port: server.port) }
        for session in sessions { #expect(try session.upgrade().status == 101) }
        let text = try eventually(server) { value("parley_connections_open{endpoint=\"echo\"}", in: $0) == 20 }
        #expect(value("parley_connections_open{endpoint=\"echo\"}", in: text) == 20)
        #expect(value("parley_workers{state=\"running\"}", in: text) == 2)
        let perWorker = ["0", "1"].map { value("parley_worker_sessions_open{worker=\"\($0)\"}", in: text) ?? -1 }
        #expect(perWorker.reduce(0, +) == 20)
        #expect(perWorker.allSatisfy { $0 > 0 }, "the kernel spreads connections over both workers: \(perWorker)")
        // The whole server's resident memory is the workers' sum, and each is reported too.
        let whole = value("parley_process_resident_memory_bytes", in: text) ?? 0
        let parts = ["0", "1"].map { value("parley_worker_resident_memory_bytes{worker=\"\($0)\"}", in: text) ?? 0 }
        #expect(whole == parts.reduce(0, +) && parts.allSatisfy { $0 > 0 })
        #expect(workerPIDs(text).count == 2)
    }

    @Test func aWorkerThatDiesIsRestartedAndTheOthersCarryOn() throws {
        let server = try ServerProcess(arguments: "--workers 2 --loops 1 --transcriber none --synthesizer none --turn-model none")
        let before = workerPIDs(try metrics(server))
        #expect(before.count == 2)
        kill(before[0], SIGKILL)
        let text = try eventually(server) { text in
            value("parley_worker_restarts_total", in: text) == 1 && value("parley_workers{state=\"running\"}", in: text) == 2
                && !workerPIDs(text).contains(before[0])
        }
        #expect(value("parley_worker_restarts_total", in: text) == 1)
        #expect(workerPIDs(text).contains(before[1]) && !workerPIDs(text).contains(before[0]))
        // Both workers serve again: a batch of sessions all open.
        for _ in 0..<10 {
            let client = try TestClient(port: server.port)
            #expect(try client.upgrade().status == 101)
        }
    }

    @Test func sigtermClosesEverySessionOnEveryWorkerAndExitsZero() throws {
        let server = try ServerProcess(arguments: "--workers 2 --loops 1 --transcriber none --synthesizer none --turn-model none")
        let sessions = try (0..<10).map { _ in try TestClient(port: server.port) }
        for session in sessions { #expect(try session.upgrade().status == 101) }
        let pids = workerPIDs(try eventually(server) { workerPIDs($0).count == 2 })
        server.signal(SIGTERM)
        for session in sessions {
            #expect(try session.readClose() == 1001)
            try session.send(TestClient.frame(0x8, [0x03, 0xE9]))
        }
        #expect(server.waitForExit(seconds: 15) == 0)
        for pid in pids { #expect(kill(pid, 0) != 0, "worker \(pid) outlived its supervisor") }
    }

    @Test func aWorkerOutOfItsSupervisorRefusesToStart() throws {
        #expect(throws: ServerProcess.StartFailure.self) {
            try ServerProcess(arguments: "--worker-dir /tmp --worker-name worker-0")
        }
    }

    /// A client secret minted by one worker opens a session on any: the supervisor gives them one key.
    @Test func clientSecretsWorkAcrossWorkers() throws {
        let server = try ServerProcess(arguments: "--workers 3 --loops 1 --transcriber none --synthesizer none", environment: "PARLEY_API_KEY=sk-workers")
        var opened = 0
        for _ in 0..<12 {
            let mint = try TestClient(port: server.port)
            let body = #"{"session":{"type":"realtime","instructions":"Hi."}}"#
            try mint.send("POST /v1/realtime/client_secrets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer sk-workers\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            let response = try mint.readResponse()
            guard let start = response.body.firstRange(of: "\"value\":\"") else { continue }
            let value = response.body[start.upperBound...].prefix { $0 != "\"" }
            // A new connection: the kernel may hand it to another worker.
            let client = try TestClient(port: server.port)
            if try client.upgrade(path: "/v1/realtime", extraHeaders: "Authorization: Bearer \(value)\r\n").status == 101 { opened += 1 }
        }
        #expect(opened == 12)
    }
}
