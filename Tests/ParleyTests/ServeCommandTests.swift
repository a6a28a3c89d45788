import Glibc
import Loop
import Testing
import TestSupport

/// The `parley serve` executable, as an operator runs it.
@Suite struct ServeCommandTests {
    @Test func sigtermClosesSessionsWith1001AndExitsZero() throws {
        let process = try ServerProcess()
        let client = try TestClient(port: process.port)
        #expect(try client.upgrade().status == 101)
        process.signal(SIGTERM)
        #expect(try client.readClose() == 1001)
        try client.send(TestClient.frame(0x8, [0x03, 0xE9]))
        #expect(client.readsEOF())
        client.hangUp()
        #expect(process.waitForExit(seconds: 10) == 0)
    }

    @Test func shutdownIsBoundedWhenClientsNeverAnswer() throws {
        let process = try ServerProcess(arguments: "--shutdown-timeout 0.5 --close-timeout 5")
        let client = try TestClient(port: process.port)
        #expect(try client.upgrade().status == 101)
        process.signal(SIGINT)
        #expect(try client.readClose() == 1001)
        // The client never answers; the server must still be gone soon after the shutdown timeout.
        #expect(process.waitForExit(seconds: 5) == 0)
    }

    /// libsrtp2 is opened when a WebRTC call first needs it (`SRTPContext`), not linked: Debian's is
    /// built on NSS, so a server holding a session but no call maps neither it nor NSS's libraries.
    @Test func aServerThatTakesNoCallMapsNeitherLibsrtp2NorNSS() throws {
        let process = try ServerProcess()
        let client = try TestClient(port: process.port)
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        let maps = String(decoding: try #require(Sys.readFile("/proc/\(process.pid)/maps")), as: UTF8.self)
        for library in ["/libsrtp2.so", "/libnss3.so", "/libnspr4.so", "/libnssutil3.so"] {
            #expect(!maps.contains(library), "\(library) is mapped")
        }
    }

    @Test func rootServesTheClientPageAndSessionsOpenOnWs() throws {
        let process = try ServerProcess()
        let client = try TestClient(port: process.port)
        // The page and the two files it loads, on one connection, each fetched again on every load.
        var files: [String: String] = [:]
        for (path, type) in [("/", "text/html"), ("/client.js", "text/javascript"), ("/client.css", "text/css")] {
            try client.send("GET \(path) HTTP/1.1\r\nHost: a\r\n\r\n")
            let file = try client.readResponse()
            #expect(file.status == 200 && file.headers["content-type"] == "\(type); charset=utf-8", "\(path)")
            #expect(file.headers["cache-control"] == "no-cache", "\(path)")
            files[path] = file.body
        }
        let page = files["/", default: ""], script = files["/client.js", default: ""]
        #expect(page.contains("<link rel=\"stylesheet\" href=\"/client.css\">") && page.contains("<script src=\"/client.js\"></script>"))
        #expect(page.contains("id=\"start\"") && files["/client.css", default: ""].contains("#log {"))
        // The voice client, whole: its call, its socket, its microphone paths, and nothing from elsewhere.
        #expect(script.contains("\"/ws\"") && script.contains("AudioEncoder") && script.contains("autostart"))
        #expect(script.contains("\"/v1/realtime/calls\"") && script.contains("\"oai-events\"") && script.contains("transport"))
        #expect(script.contains("echoCancellation: true, noiseSuppression: true, autoGainControl: true"))
        #expect(files.values.allSatisfy { !$0.contains("http://") && !$0.contains("https://") })
        let session = try TestClient(port: process.port)
        #expect(try session.upgrade(path: "/ws").status == 101)
        #expect(String(decoding: try session.readFrame().payload, as: UTF8.self).contains("session.created"))
    }

    @Test func environmentVariablesSetTheOptions() throws {
        let process = try ServerProcess(environment: "PARLEY_MAX_MESSAGE_BYTES=200")
        let client = try TestClient(port: process.port)
        #expect(try client.upgrade().status == 101)
        try client.send(TestClient.frame(0x2, Array(repeating: 1, count: 300)))
        #expect(try client.readClose() == 1009)
    }

    @Test func invalidOptionsAreRefusedWithAMessage() throws {
        #expect(throws: ServerProcess.StartFailure.self) { try ServerProcess(arguments: "--loops 0") }
    }

    /// `parley serve` with these words after it (and `--port 0`) and these variables, as a shell
    /// runs it: its exit status and what it wrote to stderr.
    func start(_ arguments: String, environment: String = "") throws -> Subprocess.Captured {
        try Subprocess.capture(["/bin/sh", "-c", "exec env \(environment) '\(ServerProcess.parleyPath)' serve --port 0 \(arguments)"])
    }

    @Test func aBadVariableStopsTheStartWithOneLineNamingItNeverADefault() throws {
        let run = try start("", environment: "PARLEY_WORKERS=abc")
        #expect(run.status != 0)
        #expect(run.stderr == "parley: --workers (PARLEY_WORKERS): 'abc' is not a whole number\n", "\(run.stderr)")
        #expect(!run.stdout.contains("listening"))
    }

    @Test func aBadFlagValueIsTheSameOneLineAsABadVariable() throws {
        let run = try start("--idle-timeout soon")
        #expect(run.status != 0)
        #expect(run.stderr == "parley: --idle-timeout (PARLEY_IDLE_TIMEOUT): 'soon' is not a number\n", "\(run.stderr)")
        let range = try start("--port 70000")
        #expect(range.status != 0)
        #expect(range.stderr == "parley: --port (PARLEY_PORT): '70000' is not a whole number from 0 to 65535\n", "\(range.stderr)")
    }

    @Test func aBadValueInTheConfigFileIsRefusedByItsVariable() throws {
        let path = "/tmp/parley-config-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(path) }
        let file = fopen(path, "w")!
        fputs("PARLEY_MAX_CONNECTIONS=lots\n", file)
        fclose(file)
        let run = try start("--config \(path)")
        #expect(run.status != 0)
        #expect(run.stderr == "parley: --max-connections (PARLEY_MAX_CONNECTIONS): 'lots' is not a whole number\n", "\(run.stderr)")
    }

    @Test func anUnknownProviderIsRefusedNamingTheValidOnes() throws {
        let run = try start("--llm gemini")
        #expect(run.status != 0)
        #expect(run.stderr == "parley: --llm (PARLEY_LLM): 'gemini' is not one of builtin, openai, anthropic\n", "\(run.stderr)")
        let fallback = try start("", environment: "PARLEY_LLM_FALLBACK=gemini")
        #expect(fallback.status != 0)
        #expect(fallback.stderr == "parley: --llm-fallback (PARLEY_LLM_FALLBACK): 'gemini' is not one of builtin, openai, anthropic\n", "\(fallback.stderr)")
    }

    @Test func atTheDescriptorLimitAcceptRefusesWithoutSpinning() throws {
        // 32 descriptors: after stdio, epoll, eventfds, listeners and the spare, about 20 connections.
        let process = try ServerProcess(arguments: "--loops 1", descriptorLimit: 32)
        var clients: [TestClient] = []
        for _ in 0..<60 { if let client = try? TestClient(port: process.port, timeoutSeconds: 2) { clients.append(client) } }
        let before = process.cpuSeconds()
        usleep(1_000_000)
        let spent = process.cpuSeconds() - before
        #expect(spent < 0.3, "the loop spun for \(spent) s of CPU in one second")
        // Some were refused (accepted and closed at once); the rest are served.
        #expect(clients.contains { $0.readsEOF() })
        clients.removeAll()
        // The server frees those descriptors as it reads each hang-up; until it has, a new
        // connection may still meet the limit and be refused. Try again for a few seconds.
        var metrics = ""
        for _ in 0..<30 where metrics.isEmpty {
            usleep(100_000)
            guard let probe = try? TestClient(port: process.port) else { continue }
            try? probe.send("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n")
            metrics = (try? probe.readResponse().body) ?? ""
        }
        let refused = metrics.split(separator: "\n").first { $0.hasPrefix("parley_connections_refused_total{reason=\"descriptor_limit\"}") }
        #expect(refused.flatMap { Double($0.split(separator: " ").last!) }.map { $0 > 0 } == true)
    }
}
