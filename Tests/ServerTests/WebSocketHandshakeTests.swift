import Testing
@testable import Server

@Suite struct WebSocketHandshakeTests {
    func request(_ extra: [(String, String)] = [], dropping: String? = nil, method: String = "GET") -> HTTPRequest {
        var headers = [("Host", "server.example.com"), ("Upgrade", "websocket"), ("Connection", "keep-alive, Upgrade"),
                       ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")]
        headers.removeAll { $0.0.lowercased() == dropping?.lowercased() }
        for (name, value) in extra {
            headers.removeAll { $0.0 == name }
            headers.append((name, value))
        }
        return HTTPRequest(method: method, target: "/chat", minorVersion: 1, headers: headers.map { (name: $0.0, value: $0.1) })
    }

    func evaluate(_ request: HTTPRequest, negotiate: Router.Negotiate?) -> WebSocketHandshake.Verdict {
        WebSocketHandshake.evaluate(request, admit: Router.admission(negotiate: negotiate) { _, _ in EchoHandler.shared })
    }

    func refusal(_ verdict: WebSocketHandshake.Verdict) -> HTTPResponse? {
        if case .refuse(let response) = verdict { return response }
        return nil
    }

    @Test func computesTheAcceptKeyFromRFC6455() {
        #expect(WebSocketHandshake.acceptKey(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func acceptsAValidUpgrade() {
        guard case .accept(let response, let admission) = evaluate(request(), negotiate: nil) else {
            Issue.record("refused")
            return
        }
        #expect(response.status.code == 101 && admission.subprotocol == nil)
        #expect(response.headers.contains { $0 == ("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") })
    }

    @Test func wrongVersionGets426NamingVersion13() {
        let response = refusal(evaluate(request([("Sec-WebSocket-Version", "8")]), negotiate: nil))
        #expect(response?.status.code == 426)
        #expect(response?.headers.contains { $0 == ("Sec-WebSocket-Version", "13") } == true)
    }

    @Test func missingUpgradeGets426() {
        #expect(refusal(evaluate(request(dropping: "Upgrade"), negotiate: nil))?.status.code == 426)
    }

    @Test func missingConnectionUpgradeTokenGets400() {
        #expect(refusal(evaluate(request([("Connection", "keep-alive")]), negotiate: nil))?.status.code == 400)
    }

    @Test(arguments: ["", "not base64!", "dGhlIHNhbXBsZQ==", "dGhlIHNhbXBsZSBub25jZSBsb25nZXI="])
    func badKeyGets400(_ key: String) {
        #expect(refusal(evaluate(request([("Sec-WebSocket-Key", key)]), negotiate: nil))?.status.code == 400)
    }

    @Test func missingKeyGets400() {
        #expect(refusal(evaluate(request(dropping: "Sec-WebSocket-Key"), negotiate: nil))?.status.code == 400)
    }

    @Test func nonGetGets405() {
        #expect(refusal(evaluate(request(method: "POST"), negotiate: nil))?.status.code == 405)
    }

    @Test func negotiationHookChoosesAndCanRefuse() {
        let negotiate: Router.Negotiate = { _, offered in
            offered.contains("Forbidden") ? .failure(HTTPRefusal(.forbidden)) : .success(offered.first { $0 == "chat.v2" })
        }
        let offered = request([("Sec-WebSocket-Protocol", "chat.v1, chat.v2")])
        guard case .accept(let response, let admission) = evaluate(offered, negotiate: negotiate) else {
            Issue.record("refused")
            return
        }
        #expect(admission.subprotocol == "chat.v2")
        #expect(response.headers.contains { $0 == ("Sec-WebSocket-Protocol", "chat.v2") })
        let forbidden = request([("Sec-WebSocket-Protocol", "Forbidden")])
        #expect(refusal(evaluate(forbidden, negotiate: negotiate))?.status.code == 403)
    }
}
