import Testing
import Server
import Session
import TestSupport

@Suite struct PlaceholderSessionTests {
    @Test func greetsWithSessionCreatedAndAnswersEventsWithAnError() throws {
        let server = try TestServer(routes: { $0.webSocket("/ws", name: "ws") { _, _ in PlaceholderSessionHandler.shared } })
        let client = try server.client()
        #expect(try client.upgrade(path: "/ws").status == 101)
        let greeting = String(decoding: try client.readFrame().payload, as: UTF8.self)
        #expect(greeting.contains(#""type":"session.created""#))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        let reply = try client.readFrame()
        #expect(reply.opcode == 0x1)
        #expect(String(decoding: reply.payload, as: UTF8.self).contains(#""type":"error""#))
    }
}
