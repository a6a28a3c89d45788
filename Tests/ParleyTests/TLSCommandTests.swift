import Glibc
import JSON
import Loop
import Server
import Testing
import TestSupport
import TLS

/// The real executables over real TLS: `parley serve` with a certificate, talking to `parley
/// mock-llm` served over https, with a CA made at test time.
@Suite struct TLSCommandTests {
    let certificates: TestCertificates

    init() throws {
        certificates = try TestCertificates.get()
    }

    var tlsArguments: String { "--tls-cert \(certificates.serverCertificate) --tls-key \(certificates.serverKey)" }

    func mockLLM() throws -> ServerProcess {
        try ServerProcess(command: "mock-llm", arguments: "--first-token-ms 10 --tokens-per-second 500 --reply-tokens 8 \(tlsArguments)")
    }

    func session(_ server: ServerProcess) throws -> TestClient {
        let client = try TestClient(port: server.port, tls: TLSContext.client(caFile: certificates.caCertificate))
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        #expect(try event(client)["type"]?.string == "session.created")
        return client
    }

    func event(_ client: TestClient) throws -> JSON {
        try JSON(parsing: String(decoding: try client.readFrame().payload, as: UTF8.self))
    }

    /// Sends one text turn and returns its events up to response.done.
    func turn(_ client: TestClient, _ text: String) throws -> [JSON] {
        try client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"\#(text)"}]}}"#.utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        var events: [JSON] = []
        while events.last?["type"]?.string != "response.done" { events.append(try event(client)) }
        return events
    }

    /// OpenSSL is opened when first used (`OpenSSL.load`), not linked: a plain server holding a
    /// session has neither libssl nor libcrypto mapped; one serving TLS has both.
    @Test func onlyAServerThatUsesTLSHasOpenSSLMapped() throws {
        func mapsOpenSSL(_ server: ServerProcess) throws -> (ssl: Bool, crypto: Bool) {
            let maps = String(decoding: try #require(Sys.readFile("/proc/\(server.pid)/maps")), as: UTF8.self)
            return (maps.contains("/libssl.so"), maps.contains("/libcrypto.so"))
        }
        let plain = try ServerProcess()
        let client = try TestClient(port: plain.port)
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        #expect(try event(client)["type"]?.string == "session.created")
        let unused = try mapsOpenSSL(plain)
        #expect(!unused.ssl && !unused.crypto)

        let secure = try ServerProcess(arguments: tlsArguments)
        _ = try session(secure)
        let used = try mapsOpenSSL(secure)
        #expect(used.ssl && used.crypto)
    }

    @Test func aWssSessionIsAnsweredByAnHTTPSUpstreamTrustedThroughUpstreamCA() throws {
        let mock = try mockLLM()
        let server = try ServerProcess(arguments: "\(tlsArguments) --llm openai --llm-model mock --llm-base-url https://127.0.0.1:\(mock.port)/v1 --upstream-ca \(certificates.caCertificate)")
        let client = try session(server)
        let events = try turn(client, "hello over TLS both ways")
        #expect(events.contains { $0["type"]?.string == "response.output_text.delta" })
        #expect(events.last?["response"]?["status"]?.string == "completed")
    }

    @Test func anUpstreamCertificateThatDoesNotVerifyIsReportedAsAnErrorEvent() throws {
        let mock = try mockLLM()
        // No --upstream-ca: the system store does not know the test CA.
        let server = try ServerProcess(arguments: "\(tlsArguments) --llm openai --llm-model mock --llm-base-url https://127.0.0.1:\(mock.port)/v1")
        let client = try session(server)
        let events = try turn(client, "hello")
        let errors = events.filter { $0["type"]?.string == "error" }.map { $0["error"]?["message"]?.string ?? "" }
        #expect(errors.contains { $0.contains("certificate verify failed") }, "\(errors)")
        #expect(events.last?["response"]?["status"]?.string == "failed")
        // The session is still there for the next turn.
        #expect(try turn(client, "again").last?["response"]?["status"]?.string == "failed")
    }

    @Test func sighupReloadsTheCertificateWithoutDroppingSessions() throws {
        let server = try ServerProcess(arguments: tlsArguments)
        let client = try session(server)
        server.signal(SIGHUP)
        // The session carries on; new sessions still verify.
        try client.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.clear"}"#.utf8)))
        #expect(try event(client)["type"]?.string == "input_audio_buffer.cleared")
        _ = try session(server)
        // The reload happens on the signal thread; give it a moment on a loaded machine.
        var reloaded = false
        for _ in 0..<50 where !reloaded {
            reloaded = try metrics(server).contains("parley_tls_certificate_reloads_total{result=\"ok\"} 1")
            if !reloaded { usleep(100_000) }
        }
        #expect(reloaded)
    }

    @Test func aKeyThatIsNotThereStopsStartUpWithAMessage() throws {
        #expect(throws: ServerProcess.StartFailure.self) {
            try ServerProcess(arguments: "--tls-cert \(certificates.serverCertificate) --tls-key /nonexistent.key")
        }
    }

    func metrics(_ server: ServerProcess) throws -> String {
        let client = try TestClient(port: server.port, tls: TLSContext.client(caFile: certificates.caCertificate))
        try client.send("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try client.readResponse().body
    }
}
