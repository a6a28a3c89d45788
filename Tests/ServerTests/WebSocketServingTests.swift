import Glibc
import Testing
@testable import Server
import TestSupport

/// The WebSocket endpoint over real sockets.
@Suite struct WebSocketServingTests {
    func openEcho(_ server: TestServer) throws -> TestClient {
        let client = try server.client()
        let (status, headers) = try client.upgrade()
        #expect(status == 101)
        #expect(headers["sec-websocket-accept"] == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        return client
    }

    @Test func echoesTextAndBinaryMessages() throws {
        let server = try TestServer()
        let client = try openEcho(server)
        try client.send(TestClient.frame(0x1, Array("Hello".utf8)))
        #expect(try client.readFrame() == (true, 0x1, Array("Hello".utf8)))
        let blob = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try client.send(TestClient.frame(0x2, blob))
        #expect(try client.readFrame() == (true, 0x2, blob))
        #expect(server.metric("parley_connections_open{endpoint=\"echo\"}") == 1)
    }

    @Test func joinsFragmentsAndAnswersPingsBetweenThem() throws {
        let server = try TestServer()
        let client = try openEcho(server)
        try client.send(TestClient.frame(0x1, Array("Hel".utf8), fin: false) + TestClient.frame(0x9, Array("ping!".utf8)) + TestClient.frame(0x0, Array("lo".utf8)))
        #expect(try client.readFrame() == (true, 0xA, Array("ping!".utf8)))
        #expect(try client.readFrame() == (true, 0x1, Array("Hello".utf8)))
    }

    @Test func framesThatArriveWithTheHandshakeAreRead() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.send("GET /echo HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(TestClient.sampleKey)\r\nSec-WebSocket-Version: 13\r\n\r\n")
        try client.send(TestClient.frame(0x1, Array("early".utf8)))
        #expect(try client.readResponse().status == 101)
        #expect(try client.readFrame() == (true, 0x1, Array("early".utf8)))
    }

    @Test func closeHandshakeEchoesTheCodeAndTheServerClosesTCP() throws {
        let server = try TestServer()
        let client = try openEcho(server)
        try client.send(TestClient.frame(0x8, [0x03, 0xE8] + Array("done".utf8)))
        #expect(try client.readClose() == 1000)
        #expect(client.readsEOF())
        client.hangUp()
        #expect(server.metric("parley_connections_closed_total{code=\"1000\"}", becomes: 1))
    }

    @Test func finArrivingWithTheLastDataIsNotMissed() throws {
        // Edge-triggered epoll reports data and FIN as one edge; a reader that stops at a short read
        // would miss the FIN and hold the connection until the close time-out.
        let server = try TestServer { $0.closeTimeout = 60 }
        let client = try openEcho(server)
        try client.send(TestClient.frame(0x8, [0x03, 0xE8]))
        shutdown(client.fd, Int32(SHUT_WR))
        #expect(server.metric("parley_connections_open{endpoint=\"echo\"}", becomes: 0))
    }

    @Test func unmaskedClientFrameCloses1002() throws {
        let server = try TestServer()
        let client = try openEcho(server)
        try client.send(TestClient.frame(0x1, Array("Hello".utf8), masked: false))
        #expect(try client.readClose() == 1002)
        #expect(client.readsEOF())
    }

    @Test func invalidUTF8Closes1007() throws {
        let server = try TestServer()
        let client = try openEcho(server)
        try client.send(TestClient.frame(0x1, [0x48, 0xC0, 0xAF], fin: false))
        #expect(try client.readClose() == 1007)
    }

    @Test func messageOverTheLimitCloses1009() throws {
        let server = try TestServer { $0.maxMessageBytes = 1000 }
        let client = try openEcho(server)
        try client.send(TestClient.frame(0x2, Array(repeating: 1, count: 1001)))
        #expect(try client.readClose() == 1009)
    }

    @Test func wrongVersionIsRefusedWith426() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.send("GET /echo HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(TestClient.sampleKey)\r\nSec-WebSocket-Version: 7\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 426 && response.headers["sec-websocket-version"] == "13")
    }

    @Test func subprotocolIsNegotiatedThroughTheHook() throws {
        let server = try TestServer()
        let client = try server.client()
        let (status, headers) = try client.upgrade(path: "/chat", extraHeaders: "Sec-WebSocket-Protocol: chat.v1, chat.v2\r\n")
        #expect(status == 101 && headers["sec-websocket-protocol"] == "chat.v1")
        let refused = try server.client()
        #expect(try refused.upgrade(path: "/chat", extraHeaders: "Sec-WebSocket-Protocol: forbidden\r\n").status == 403)
    }

    @Test func idleConnectionIsPingedThenDroppedIfSilent() throws {
        let server = try TestServer { $0.idleTimeout = 0.3; $0.pingTimeout = 0.3 }
        let client = try openEcho(server)
        #expect(try client.readFrame() == (true, 0x9, []))
        #expect(client.readsEOF())
        #expect(server.metric("parley_connections_closed_total{code=\"1006\"}", becomes: 1))
    }

    @Test func answeringThePingKeepsTheConnection() throws {
        let server = try TestServer { $0.idleTimeout = 0.3; $0.pingTimeout = 0.3 }
        let client = try openEcho(server)
        for _ in 0..<3 {
            #expect(try client.readFrame().opcode == 0x9)
            try client.send(TestClient.frame(0xA, []))
        }
        try client.send(TestClient.frame(0x1, Array("still here".utf8)))
        #expect(try client.readFrame() == (true, 0x1, Array("still here".utf8)))
    }

    @Test func shutdownSends1001ToEverySession() throws {
        let server = try TestServer(loops: 2)
        let clients = try (0..<6).map { _ in try openEcho(server) }
        server.server.shutdown()
        for client in clients {
            #expect(try client.readClose() == 1001)
            try client.send(TestClient.frame(0x8, [0x03, 0xE9]))
            #expect(client.readsEOF())
            client.hangUp()
        }
        server.server.wait()
        #expect(server.metric("parley_connections_closed_total{code=\"1001\"}") == 6)
    }

    @Test func clientThatDoesNotReadCannotGrowTheHeap() throws {
        let cap = 256 * 1024
        let server = try TestServer { $0.maxOutboundBytes = cap; $0.maxMessageBytes = 64 * 1024 }
        let hog = try openEcho(server)
        // Shrink the client's receive window so the server's echoes back up quickly.
        var small: Int32 = 4096
        setsockopt(hog.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let message = TestClient.frame(0x2, Array(repeating: 7, count: 60 * 1024))
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(hog.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        for _ in 0..<200 { if (try? hog.send(message)) == nil { break } }  // stops once the server stops reading
        let accounted = server.metric("parley_accounted_bytes") ?? .infinity
        #expect(accounted < Double(2 * cap + 512 * 1024), "accounted \(accounted)")
        // Everyone else is still served.
        let other = try openEcho(server)
        try other.send(TestClient.frame(0x1, Array("fine".utf8)))
        #expect(try other.readFrame() == (true, 0x1, Array("fine".utf8)))
    }

    /// `/flood`: any message is answered with `floodMessages` of 60 KiB at once, more than the
    /// outbound cap, as a session streaming to a client that stopped reading would queue.
    static let floodMessages = 200
    final class Flood: WebSocketHandler {
        func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
            for _ in 0..<WebSocketServingTests.floodMessages { socket.send(binary: [UInt8](repeating: 7, count: 60 * 1024)) }
        }
    }

    /// A client that stops reading while the server has more to say than the cap is told why, in
    /// a close frame past everything queued before the cap (1008, with its reason), and the drop is
    /// counted by reason; the server queues nothing more for it.
    @Test func aClientDroppedAtTheOutboundCapIsToldWhy() throws {
        let server = try TestServer({ $0.maxOutboundBytes = 256 * 1024; $0.closeTimeout = 30 },
                                    routes: { $0.webSocket("/flood", name: "flood") { _, _ in Flood() } })
        let client = try server.client()
        var window: Int32 = 64 * 1024
        setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &window, socklen_t(MemoryLayout<Int32>.size))
        #expect(try client.upgrade(path: "/flood").status == 101)
        try client.send(TestClient.frame(0x1, Array("go".utf8)))
        #expect(server.metric("parley_connections_dropped_total{reason=\"outbound_cap\"}", becomes: 1))
        #expect((server.metric("parley_accounted_bytes") ?? .infinity) < Double(512 * 1024))
        var data = 0
        var close: [UInt8]?
        while close == nil {
            let frame = try client.readFrame()
            if frame.opcode == 0x8 { close = frame.payload } else { data += 1 }
        }
        let payload = try #require(close)
        #expect(payload.count > 2 && Int(payload[0]) << 8 | Int(payload[1]) == 1008)
        #expect(String(decoding: payload.dropFirst(2), as: UTF8.self) == WebSocketCloseMachine.outboundCapReason)
        // What the kernel's buffers and the queue held came first; the rest was never queued.
        #expect(data < Self.floodMessages, "\(data) messages came before the close")
        try client.send(TestClient.frame(0x8, [0x03, 0xF0]))
        #expect(client.readsEOF())
        client.hangUp()
        #expect(server.metric("parley_connections_closed_total{code=\"1008\"}", becomes: 1))
    }

    @Test func sessionMemoryIsReleasedWhenConnectionsClose() throws {
        let server = try TestServer()
        let clients = try (0..<20).map { _ in try openEcho(server) }
        for client in clients { try client.send(TestClient.frame(0x1, Array("x".utf8), fin: false)) }
        #expect((server.metric("parley_accounted_bytes") ?? 0) > 0)
        for client in clients {
            try client.send(TestClient.frame(0x8, [0x03, 0xE8]))
            _ = try client.readClose()
            #expect(client.readsEOF())
            client.hangUp()
        }
        #expect(server.metric("parley_connections_open{endpoint=\"echo\"}", becomes: 0))
        #expect(server.metric("parley_accounted_bytes") == 0)
    }
}
