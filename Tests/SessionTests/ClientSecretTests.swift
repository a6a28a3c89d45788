import Access
import JSON
import Loop
import MockLLM
@testable import Models
import Server
import Session
import Testing
import TestSupport

/// Ephemeral client secrets: signed, not stored; minted with a real key; they open a session with
/// the settings they pin, for a while.
@Suite struct ClientSecretTests {
    @Test func aSecretVerifiesUntilItExpiresAndOnlyWithItsKey() {
        let signer = ClientSecretSigner(key: Array("k1".utf8))
        let secret = ClientSecret(expiresAt: 1_000, sessionSeconds: 60, session: .object([("instructions", .string("Be brief."))]))
        let token = signer.issue(secret)!
        #expect(token.hasPrefix("ek_"))
        #expect(signer.verify(token, now: 999) == secret)
        #expect(signer.verify(token, now: 1_000) == nil, "expired")
        #expect(ClientSecretSigner(key: Array("k2".utf8)).verify(token, now: 0) == nil, "another server's key")
        // Any change to the payload breaks the signature.
        var tampered = Array(token.utf8)
        tampered[5] = tampered[5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(signer.verify(String(decoding: tampered, as: UTF8.self), now: 0) == nil)
        #expect(signer.verify("ek_nope", now: 0) == nil && signer.verify("sk-123", now: 0) == nil)
    }

    func server() throws -> TestServer {
        try TestServer({ $0.loops = 1 }, routes: { routes in
            RealtimeEndpoint(model: BuiltinModel(wordInterval: 0.001), modelName: "test-model", access: Access(keys: APIKeys(["sk-real"]))).install(on: &routes)
        })
    }

    func post(_ server: TestServer, _ path: String, _ body: String, key: String?) throws -> (status: Int, json: JSON?) {
        let client = try server.client()
        let auth = key.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        try client.send("POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\(auth)Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let response = try client.readResponse()
        return (response.status, try? JSON(parsing: response.body))
    }

    @Test func aSecretMintedWithAKeyOpensASessionThatKeepsItsSettings() throws {
        let server = try server()
        let body = #"{"expires_after":{"anchor":"created_at","seconds":120},"session":{"type":"realtime","model":"gpt-realtime","instructions":"Answer in French."}}"#
        #expect(try post(server, "/v1/realtime/client_secrets", body, key: nil).status == 401)
        #expect(try post(server, "/v1/realtime/client_secrets", body, key: "sk-wrong").status == 401)
        let minted = try post(server, "/v1/realtime/client_secrets", body, key: "sk-real")
        #expect(minted.status == 200)
        let value = try #require(minted.json?["value"]?.string)
        #expect(value.hasPrefix("ek_") && (minted.json?["expires_at"]?.int ?? 0) > WallClock.seconds())
        #expect(minted.json?["session"]?["instructions"]?.string == "Answer in French.")
        // A secret cannot mint another.
        #expect(try post(server, "/v1/realtime/client_secrets", body, key: value).status == 401)

        let browser = try server.client()
        let (status, headers) = try browser.upgrade(path: "/v1/realtime", extraHeaders: "Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.\(value)\r\n")
        #expect(status == 101 && headers["sec-websocket-protocol"] == "realtime")
        let created = try browser.readEvent()
        #expect(created["session"]?["instructions"]?.string == "Answer in French." && created["session"]?["model"]?.string == "gpt-realtime")
        try browser.send(TestClient.frame(0x1, Array(#"{"type":"session.update","event_id":"u1","session":{"instructions":"Answer in English."}}"#.utf8)))
        let refused = try browser.readEvent()
        #expect(refused["type"]?.string == "error" && refused["error"]?["param"]?.string == "session.instructions", "\(refused)")
        // What the secret does not pin may change.
        try browser.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":{"max_output_tokens":50}}"#.utf8)))
        #expect(try browser.readEvent()["type"]?.string == "session.updated")

        let forged = value.dropLast(2) + (value.hasSuffix("AA") ? "BB" : "AA")
        #expect(try server.client().upgrade(path: "/v1/realtime", extraHeaders: "Authorization: Bearer \(forged)\r\n").status == 401)
    }

    /// A secret whose session is a transcription one opens a transcription session; this server
    /// has no recogniser, so the session says so and closes.
    @Test func aTranscriptionSecretOpensATranscriptionSession() throws {
        let server = try server()
        let body = #"{"session":{"type":"transcription","audio":{"input":{"noise_reduction":{"type":"far_field"}}}}}"#
        let minted = try post(server, "/v1/realtime/client_secrets", body, key: "sk-real")
        #expect(minted.status == 200)
        #expect(minted.json?["session"]?["type"]?.string == "transcription")
        #expect(minted.json?["session"]?["object"]?.string == "realtime.transcription_session")
        #expect(minted.json?["session"]?["audio"]?["input"]?["noise_reduction"]?["type"]?.string == "far_field")
        let value = try #require(minted.json?["value"]?.string)
        let client = try server.client()
        #expect(try client.upgrade(path: "/v1/realtime", extraHeaders: "Authorization: Bearer \(value)\r\n").status == 101)
        let refused = try client.readEvent()
        #expect(refused["error"]?["code"]?.string == "transcription_unavailable", "\(refused)")
        #expect(try client.readClose() == 1008)
    }

    @Test func theBetaSessionsRouteAnswersWithAClientSecretObject() throws {
        let server = try server()
        let minted = try post(server, "/v1/realtime/sessions", #"{"model":"gpt-4o-realtime-preview","voice":"verse","instructions":"Hi."}"#, key: "sk-real")
        #expect(minted.status == 200)
        #expect(minted.json?["client_secret"]?["value"]?.string?.hasPrefix("ek_") == true)
        #expect(minted.json?["voice"]?.string == "verse" && minted.json?["object"]?.string == "realtime.session")
        #expect(try post(server, "/v1/realtime/sessions", #"{"voice":""}"#, key: "sk-real").status == 400)
        #expect(try post(server, "/v1/realtime/sessions", "not json", key: "sk-real").status == 400)
    }

    /// A secret's settings are readable by the browser that holds it: an MCP server's credentials
    /// are refused there, a server without any is pinned like the other settings.
    @Test func aSecretCannotCarryAnMCPServersCredentials() throws {
        let server = try server()
        let withToken = #"{"session":{"tools":[{"type":"mcp","server_label":"crm","server_url":"http://127.0.0.1:9/mcp","authorization":"tok-7f3a9b"}]}}"#
        let refused = try post(server, "/v1/realtime/client_secrets", withToken, key: "sk-real")
        #expect(refused.status == 400 && refused.json?["error"]?["message"]?.string?.contains("authorization") == true)
        #expect(refused.json?.description.contains("tok-7f3a9b") == false)
        let open = #"{"session":{"tools":[{"type":"mcp","server_label":"docs","server_url":"http://127.0.0.1:9/mcp","require_approval":"never"}]}}"#
        let minted = try post(server, "/v1/realtime/client_secrets", open, key: "sk-real")
        #expect(minted.status == 200 && minted.json?["session"]?["tools"]?.array?.first?["server_label"]?.string == "docs")
    }
}
