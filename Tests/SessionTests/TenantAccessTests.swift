import Access
import JSON
import Loop
@testable import Models
import Server
@testable import Session
import TLS
import Testing
import TestSupport
@testable import SessionEngine

/// Tokens and tenants over real sockets: who is let in (101), who is not (401), and a tenant at
/// its limits (429 with Retry-After, before the upgrade); a session past its token ceiling is
/// told and closed with 1008.
@Suite struct TenantAccessTests {
    static let key = try! PrivateKey(generating: .es256)

    func server(tenants: TenantLimits, limits: SessionLimits = SessionLimits()) throws -> TestServer {
        let access = Access(keys: APIKeys(entries: [APIKeys.Entry(key: "sk-acme", tenant: "acme")]),
                            tokens: JWTVerifier(publicKeys: [try PublicKey(pem: Array(Self.key.publicPEM.utf8))], audience: "parley"),
                            tenantDefaults: tenants, ledger: TenantLedger())
        return try TestServer({ $0.loops = 1 }, routes: { routes in
            RealtimeEndpoint(model: BuiltinModel(wordInterval: 0.001), modelName: "m", access: access, limits: limits).install(on: &routes)
        })
    }

    func token(_ tenant: String, expiresIn: Int = 600, _ extra: [(String, JSON)] = []) throws -> String {
        try JWTSigner.sign(.object([("sub", .string(tenant)), ("aud", .string("parley")), ("exp", .int(WallClock.seconds() + expiresIn))] + extra),
                           with: .key(Self.key))
    }

    func open(_ server: TestServer, _ credential: String) throws -> (client: TestClient, status: Int, headers: [String: String], code: String?) {
        let client = try server.client()
        let response = try client.upgradeResponse(path: "/v1/realtime", extraHeaders: "Authorization: Bearer \(credential)\r\n")
        let code = (try? JSON(parsing: response.body))?["error"]?["code"]?.string
        if response.status == 101 { _ = try client.readEvent() }
        return (client, response.status, response.headers, code)
    }

    @Test func tokensOpenSessionsAndBadOnesGet401WithTheReason() throws {
        let server = try server(tenants: TenantLimits())
        #expect(try open(server, token("acme")).status == 101)
        let expired = try open(server, token("acme", expiresIn: -JWTVerifier.leewaySeconds - 5))
        #expect(expired.status == 401 && expired.code == "invalid_token" && expired.headers["www-authenticate"] == "Bearer")
        let otherAudience = try JWTSigner.sign(.object([("sub", .string("acme")), ("aud", .string("billing")), ("exp", .int(WallClock.seconds() + 60))]),
                                               with: .key(Self.key))
        #expect(try open(server, otherAudience).status == 401)
        let unsigned = Base64.encodeURL(Array(#"{"alg":"none"}"#.utf8)) + "." + Base64.encodeURL(Array(#"{"sub":"acme","aud":"parley","exp":9999999999}"#.utf8)) + "."
        #expect(try open(server, unsigned).code == "invalid_token")
        #expect(try open(server, "sk-nobody").code == "invalid_api_key")
        #expect(try open(server, "sk-acme").status == 101, "API keys still work beside tokens")
    }

    @Test func aTenantAtItsSessionLimitGets429UntilOneCloses() throws {
        let server = try server(tenants: TenantLimits(maxSessions: 1))
        let first = try open(server, "sk-acme")
        #expect(first.status == 101)
        // The same tenant by another credential: its token names it too.
        let second = try open(server, token("acme"))
        #expect(second.status == 429 && second.code == "tenant_sessions" && second.headers["retry-after"] == "1")
        #expect(try open(server, token("globex")).status == 101, "other tenants are not affected")
        // A token's claim raises its tenant's own limit.
        #expect(try open(server, token("initech", [("parley_max_sessions", .int(2))])).status == 101)
        #expect(try open(server, token("initech", [("parley_max_sessions", .int(2))])).status == 101)
        first.client.hangUp()
        #expect(server.metric(#"parley_tenant_sessions_open{tenant="acme"}"#, becomes: 0))
        #expect(try open(server, token("acme")).status == 101)
        #expect(server.metric(#"parley_tenant_refusals_total{tenant="acme",reason="tenant_sessions"}"#) == 1)
    }

    @Test func aTenantPastItsSessionRateGets429WithRetryAfter() throws {
        let server = try server(tenants: TenantLimits(sessionsPerMinute: 2))
        for _ in 0..<2 { #expect(try open(server, "sk-acme").status == 101) }
        let refused = try open(server, "sk-acme")
        #expect(refused.status == 429 && refused.code == "tenant_rate")
        #expect((Int(refused.headers["retry-after"] ?? "") ?? 0) >= 25, "two a minute: the next in about 30 s")
    }

    @Test func aClientSecretCountsAgainstTheTenantThatMintedIt() throws {
        let server = try server(tenants: TenantLimits(maxSessions: 1))
        let client = try server.client()
        let body = #"{"session":{"instructions":"Be brief."}}"#
        try client.send("POST /v1/realtime/client_secrets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(try token("acme"))\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let minted = try client.readResponse()
        let secret = try #require((try? JSON(parsing: minted.body))?["value"]?.string)
        let browser = try open(server, secret)
        #expect(browser.status == 101)
        #expect(try open(server, "sk-acme").code == "tenant_sessions", "the secret's session is acme's")
        // Minting needs a credential on a server that has them.
        let anonymous = try server.client()
        try anonymous.send("POST /v1/realtime/client_secrets HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        #expect(try anonymous.readResponse().status == 401)
    }

    @Test func aSessionPastItsTokenCeilingIsToldAndClosed() throws {
        var limits = SessionLimits()
        limits.maxSessionTokens = 5
        let server = try server(tenants: TenantLimits(), limits: limits)
        let session = try open(server, "sk-acme").client
        try session.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"Tell me about the weather in Paris today."}]}}"#.utf8)))
        try session.send(TestClient.frame(0x1, Array(#"{"type":"response.create","response":{"output_modalities":["text"]}}"#.utf8)))
        var events: [String] = []
        var error: JSON?
        while let frame = try? session.readFrame(), frame.opcode != 0x8 {
            guard let event = try? JSON(parsing: String(decoding: frame.payload, as: UTF8.self)) else { continue }
            events.append(event["type"]?.string ?? "")
            if event["type"]?.string == "error" { error = event }
        }
        #expect(events.contains("response.done"), "the response that passed the ceiling is delivered whole")
        #expect(error?["error"]?["code"]?.string == "token_limit_exceeded")
        #expect(server.metric(#"parley_session_limit_closes_total{reason="tokens"}"#) == 1)
    }
}
