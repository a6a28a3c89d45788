import Testing
import TestSupport

/// A call out is its tenant's session from the moment it is placed (issue 54): on a real `parley
/// serve` with API keys and one session a tenant, a call placed through a trunk (to a port where
/// nothing answers, so it rings on) holds the tenant's place, and the tenant's next call is refused
/// 429 as its next WebSocket would be; a request without a key is 401.
@Suite(.serialized) struct CallsOutAdmissionTests {
    static func post(_ port: Int, _ path: String, key: String?, body: String) throws -> (status: Int, headers: [String: String], body: String) {
        let client = try TestClient(port: port)
        try client.send("POST \(path) HTTP/1.1\r\nHost: a\r\n\(key.map { "Authorization: Bearer \($0)\r\n" } ?? "")"
                        + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        return try client.readResponse()
    }

    @Test func aCallOutHoldsItsTenantsPlaceWhileItRings() throws {
        let nowhere = try RedisServer.freePort(), sip = try RedisServer.freePort()
        let keys = SessionReportEndToEndTests.File("acme sk-acme\n")
        let trunks = SessionReportEndToEndTests.File(#"{"nowhere": {"uri": "sip:127.0.0.1:\#(nowhere)"}}"#)
        let server = try ServerProcess(arguments: "--loops 1 --api-keys \(keys.path) --tenant-max-sessions 1 --sip-port \(sip) --sip-host 127.0.0.1 "
                                       + "--sip-outbound-trunks \(trunks.path) \(SessionReportEndToEndTests.quiet)")
        let dial = #"{"transport": {"type": "sip", "destination": "+15550000050", "trunk": "nowhere"}}"#
        #expect(try Self.post(server.port, "/v1/realtime/calls", key: nil, body: dial).status == 401)
        let first = try Self.post(server.port, "/v1/realtime/calls", key: "sk-acme", body: dial)
        #expect(first.status == 201, "\(first)")
        let second = try Self.post(server.port, "/v1/realtime/calls", key: "sk-acme", body: dial)
        #expect(second.status == 429 && second.body.contains("tenant_sessions") && second.headers["retry-after"] != nil, "\(second)")
        withExtendedLifetime((server, keys, trunks)) {}
    }
}
