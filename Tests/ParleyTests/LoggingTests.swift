import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What `parley serve` writes to stderr: a line for each session and each refusal, a warning when
/// the model upstream fails, the session's id on every line about it, and never a secret.
@Suite struct LoggingTests {
    static let clientKey = "parley-client-SECRET-7c1f"
    static let modelKey = "sk-proj-LLMSECRET0123456789abcdef"

    @Test func sessionsRefusalsAndUpstreamFailuresAreLoggedWithoutSecrets() throws {
        // The model upstream is a port nobody listens on, so every turn fails there.
        let process = try ServerProcess(
            arguments: "--log-level trace --llm openai --llm-base-url http://127.0.0.1:1/v1 --llm-model m --transcriber none --synthesizer none",
            environment: "PARLEY_API_KEY=\(Self.clientKey) OPENAI_API_KEY=\(Self.modelKey)")

        let refused = try TestClient(port: process.port)
        #expect(try refused.upgrade(path: "/v1/realtime", extraHeaders: "Authorization: Bearer wrong-\(Self.clientKey)\r\n").status == 401)

        let client = try TestClient(port: process.port)
        #expect(try client.upgrade(path: "/v1/realtime", extraHeaders: "Authorization: Bearer \(Self.clientKey)\r\n").status == 101)
        let created = String(decoding: try client.readFrame().payload, as: UTF8.self)
        let sessionID = try #require(created.split(separator: "\"sess_", maxSplits: 1).dropFirst().first.map { "sess_" + $0.prefix { $0 != "\"" } })
        try client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}}"#.utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        // The upstream never answers: after its retries the client is told, and the turn ends
        // with the apology.
        var sawError = false, sawDone = false
        for _ in 0..<40 where !sawDone {
            let event = String(decoding: try client.readFrame().payload, as: UTF8.self)
            sawError = sawError || (event.contains("\"type\":\"error\"") && event.contains("upstream_unavailable"))
            sawDone = event.contains("\"response.done\"")
        }
        #expect(sawError && sawDone)
        try client.send(TestClient.frame(0x8, [0x03, 0xE8]))
        _ = try? client.readClose()

        process.signal(SIGTERM)
        #expect(process.waitForExit(seconds: 10) == 0)
        let log = process.remainingOutput()
        let lines = log.split(separator: "\n")
        #expect(lines.contains { $0.contains("msg=\"upgrade refused\"") && $0.contains("status=401") && $0.contains("path=/v1/realtime") })
        #expect(lines.contains { $0.contains("msg=\"session opened\"") && $0.contains("session=\(sessionID)") && $0.contains("level=info") })
        #expect(lines.contains { $0.contains("level=warning") && $0.contains("msg=\"upstream request failed\"") && $0.contains("upstream=http://127.0.0.1:1") })
        #expect(lines.contains { $0.contains("level=warning") && $0.contains("msg=\"model call failed\"") && $0.contains("session=\(sessionID)") })
        #expect(lines.contains { $0.contains("msg=\"session closed\"") && $0.contains("session=\(sessionID)") && $0.contains("code=1000") })
        // No key, token or Authorization header, in any line, at the most verbose level.
        for secret in [Self.clientKey, Self.modelKey, "LLMSECRET", "SECRET-7c1f", "Bearer", "uthorization"] {
            #expect(!log.contains(secret), "the log holds \(secret)")
        }
    }

    @Test func jsonFormatWritesOneObjectPerLine() throws {
        let process = try ServerProcess(arguments: "--log-format json --transcriber none --synthesizer none")
        let client = try TestClient(port: process.port)
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        _ = try client.readFrame()
        process.signal(SIGTERM)
        #expect(process.waitForExit(seconds: 10) == 0)
        let lines = process.remainingOutput().split(separator: "\n").filter { $0.hasPrefix("{") }
        #expect(lines.contains { $0.contains(#""msg":"session opened""#) && $0.contains(#""level":"info""#) && $0.hasSuffix("}") })
    }

    @Test func anUnknownLogLevelIsRefused() {
        #expect(throws: ServerProcess.StartFailure.self) { try ServerProcess(arguments: "--log-level loud") }
    }
}
