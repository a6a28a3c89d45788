import Server
import Synchronization
import Testing
import TestSupport

/// `/readyz` says whether balancers should send this node new sessions: 200 `ready`, or 503 with
/// the reason a check the routes added gives (a busy speech helper: `speech_busy`), which clears
/// when the check does; `/healthz` answers 200 throughout (the node is alive, not restarted).
@Suite struct ReadinessTests {
    final class Flag: Sendable {
        let busy = Atomic<Bool>(false)
    }

    static func get(_ port: Int, _ path: String) throws -> (status: Int, body: String) {
        let client = try TestClient(port: port)
        try client.send("GET \(path) HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        let response = try client.readResponse()
        return (response.status, response.body)
    }

    @Test func aCheckThatGivesAReasonMakesTheNodeNotReadyUntilItClears() throws {
        let flag = Flag()
        let server = try TestServer(routes: { routes in
            routes.notReady { flag.busy.load(ordering: .relaxed) ? "speech_busy" : nil }
        })
        let before = try Self.get(server.port, "/readyz")
        #expect(before.status == 200 && before.body == "ready\n", "\(before)")
        flag.busy.store(true, ordering: .relaxed)
        let busy = try Self.get(server.port, "/readyz")
        #expect(busy.status == 503 && busy.body == "speech_busy\n", "\(busy)")
        #expect(try Self.get(server.port, "/healthz").status == 200)
        // Sessions are still taken: readiness steers balancers, it refuses nothing itself.
        #expect(try server.client().upgrade().status == 101)
        flag.busy.store(false, ordering: .relaxed)
        #expect(try Self.get(server.port, "/readyz").status == 200)
    }
}
