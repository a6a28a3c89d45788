import Testing
@testable import Server

/// What a request gets, decided without a connection: `RequestRouting.decide`.
@Suite struct RequestRoutingTests {
    final class Silent: WebSocketHandler {
        func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {}
    }

    let router: Router = {
        var routes = Router.Builder()
        routes.get("/page") { _ in HTTPResponse(status: .ok, contentType: "text/plain", body: "page") }
        routes.post("/form") { _ in HTTPResponse(status: .ok, contentType: "text/plain", body: "posted") }
        routes.stream("GET", "/events") { _, stream in stream.end() }
        routes.webSocket("/ws", name: "ws") { _, _ in Silent() }
        routes.webSocket("/later", name: "later") { _, _ in .success(WebSocketAdmission(subprotocol: nil, handler: Silent()) { _, done in done(nil) }) }
        return Router(routes)
    }()

    /// `request("/path")` is a GET; `request("HEAD", "/path")` names the method.
    func request(_ first: String, _ second: String? = nil, upgrade: Bool = false, headers: [(name: String, value: String)] = []) -> HTTPRequest {
        let (method, target) = second.map { (first, $0) } ?? ("GET", first)
        var all: [(name: String, value: String)] = [("Host", "localhost")]
        if upgrade {
            all += [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")]
        }
        return HTTPRequest(method: method, target: target, minorVersion: 1, headers: all + headers)
    }

    func decide(_ request: HTTPRequest, origins: [String]? = nil, draining: Bool = false, slots: Int = 1) -> (RouteDecision, reserved: Int) {
        var reserved = 0
        let decision = RequestRouting.decide(request, router: router, allowedOrigins: origins, draining: draining) {
            guard reserved < slots else { return false }
            reserved += 1
            return true
        }
        return (decision, reserved)
    }

    func status(_ decision: RouteDecision) -> Int? {
        switch decision {
        case .respond(let response, _, _), .refuse(let response), .upgrade(let response, _, _), .confirmThenUpgrade(let response, _, _): response.status.code
        case .stream: nil
        }
    }

    @Test func unknownPathIs404AndKeepsTheConnection() {
        guard case .respond(let response, let keepAlive, _) = decide(request("/nowhere")).0 else { Issue.record("not a response"); return }
        #expect(response.status.code == 404)
        #expect(keepAlive)
    }

    @Test func headIsServedByGetWithoutItsBody() {
        guard case .respond(let response, _, let includeBody) = decide(request("HEAD", "/page")).0 else { Issue.record("not a response"); return }
        #expect(response.status.code == 200)
        #expect(!includeBody)
    }

    @Test func anUnservedMethodIs405WithItsAllowList() {
        guard case .respond(let response, _, _) = decide(request("DELETE", "/page")).0 else { Issue.record("not a response"); return }
        #expect(response.status.code == 405)
        #expect(response.headers.first { $0.0 == "Allow" }?.1 == "GET, HEAD")
        guard case .respond(let post, _, _) = decide(request("GET", "/form")).0 else { Issue.record("not a response"); return }
        #expect(post.headers.first { $0.0 == "Allow" }?.1 == "POST")
    }

    @Test func streamedRoutesStreamAndHeadDropsTheBody() {
        guard case .stream(_, let keepAlive, let includeBody) = decide(request("HEAD", "/events")).0 else { Issue.record("not a stream"); return }
        #expect(keepAlive && !includeBody)
    }

    @Test func drainingStopsKeepAliveAndRefusesUpgradesWith503() {
        guard case .respond(_, let keepAlive, _) = decide(request("/page"), draining: true).0 else { Issue.record("not a response"); return }
        #expect(!keepAlive)
        let (decision, reserved) = decide(request("/ws", upgrade: true), draining: true)
        guard case .refuse(let response) = decision else { Issue.record("not refused"); return }
        #expect(response.status.code == 503)
        #expect(response.headers.first { $0.0 == "Retry-After" }?.1 == "1")
        #expect(reserved == 0)
    }

    @Test func anOriginOutsideTheListIs403BeforeAnySlotIsTaken() {
        let (decision, reserved) = decide(request("/ws", upgrade: true, headers: [("Origin", "https://elsewhere.example")]), origins: ["https://app.example"])
        #expect(status(decision) == 403)
        #expect(reserved == 0)
        let (allowed, taken) = decide(request("/ws", upgrade: true, headers: [("Origin", "HTTPS://APP.example")]), origins: ["https://app.example"])
        guard case .upgrade = allowed else { Issue.record("an allowed origin was refused"); return }
        #expect(taken == 1)
    }

    @Test func aBadHandshakeIsRefusedWithoutTakingASlot() {
        let (decision, reserved) = decide(request("/ws"))
        #expect(status(decision) == 426)
        #expect(reserved == 0)
    }

    @Test func aGoodHandshakeTakesASlotAndUpgradesOr503WhenNoneIsLeft() {
        let (decision, reserved) = decide(request("/ws", upgrade: true))
        guard case .upgrade(let response, let endpoint, _) = decision else { Issue.record("not an upgrade"); return }
        #expect(response.status.code == 101)
        #expect(endpoint.name == "ws")
        #expect(reserved == 1)
        let (full, _) = decide(request("/ws", upgrade: true), slots: 0)
        guard case .refuse(let refusal) = full else { Issue.record("not refused"); return }
        #expect(refusal.status.code == 503)
    }

    /// An admission that confirms later (a tenant's count in Redis) takes its slot only once it
    /// has: a refusal from it then holds none.
    @Test func anAdmissionToConfirmTakesNoSlotYet() {
        let (decision, reserved) = decide(request("/later", upgrade: true))
        guard case .confirmThenUpgrade(let response, let endpoint, let admission) = decision else { Issue.record("not to confirm: \(decision)"); return }
        #expect(response.status.code == 101 && endpoint.name == "later" && admission.confirm != nil)
        #expect(reserved == 0)
    }
}
