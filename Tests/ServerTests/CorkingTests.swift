import Glibc
import Testing
@testable import Server
import TestSupport
import Loop
@testable import TLS

/// Corking over real sockets: what a handler sends in one pass is held and written at the pass's
/// end (`OutputCork`), and must arrive whole and in order, over ws and wss, whatever its sizes:
/// small frames that share a run, a frame too large to cork, more than the loop's arena holds,
/// and two connections written to in turn, whose runs move past each other.
@Suite struct CorkingTests {
    /// The payload of the `index`th message of a burst: its number, then filler to `size` bytes.
    static func payload(_ index: Int, size: Int) -> [UInt8] {
        let tag = Array("\(index):".utf8)
        return tag + [UInt8](repeating: UInt8(ascii: "a") + UInt8(index % 26), count: max(0, size - tag.count))
    }

    /// The sizes of one burst: many small frames, a 20 KiB one (past the run limit) in their midst,
    /// and in all about 150 KiB, more than twice the arena.
    static let burst: [Int] = (0..<300).map { i in i == 120 ? 20_000 : (i % 7 == 0 ? 1_000 : 40 + i % 50) } + [70_000]

    /// `/burst`: each message asks for the whole burst, sent from inside the one read that brought it.
    /// `/pair`: the second connection's message sends the burst to both connections, alternately.
    static func routes(_ routes: inout Router.Builder) {
        routes.webSocket("/burst", name: "burst") { _, _ in BurstHandler() }
        let pair = Pair()
        routes.webSocket("/pair", name: "pair") { _, _ in PairHandler(pair: pair) }
    }

    final class BurstHandler: WebSocketHandler {
        func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
            for (i, size) in CorkingTests.burst.enumerated() { socket.send(binary: CorkingTests.payload(i, size: size)) }
        }
    }

    final class Pair: @unchecked Sendable {
        var sockets: [WebSocket] = []
    }

    final class PairHandler: WebSocketHandler {
        let pair: Pair
        init(pair: Pair) { self.pair = pair }

        func webSocketDidOpen(_ socket: WebSocket) { pair.sockets.append(socket) }

        func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
            for (i, size) in CorkingTests.burst.enumerated() {
                for target in pair.sockets { target.send(binary: CorkingTests.payload(i, size: size)) }
            }
        }
    }

    func readBurst(_ client: TestClient) throws {
        for (i, size) in Self.burst.enumerated() {
            let frame = try client.readFrame()
            #expect(frame.opcode == 2)
            guard frame.payload == Self.payload(i, size: size) else {
                Issue.record("message \(i) of the burst arrived as \(frame.payload.prefix(12)) (\(frame.payload.count) bytes)")
                return
            }
        }
    }

    func tlsServer() throws -> TestServer {
        let certificates = try TestCertificates.get()
        return try TestServer({ config in
            config.tlsCertificateFile = certificates.serverCertificate
            config.tlsKeyFile = certificates.serverKey
        }, routes: Self.routes)
    }

    func tlsClient(_ server: TestServer) throws -> TestClient {
        try TestClient(port: server.port, tls: TLSContext.client(caFile: TestCertificates.get().caCertificate), serverName: "localhost")
    }

    @Test func aBurstSentInOnePassArrivesWholeAndInOrderOverWS() throws {
        let server = try TestServer(routes: Self.routes)
        let client = try server.client()
        #expect(try client.upgrade(path: "/burst").status == 101)
        for _ in 0..<2 {
            try client.send(TestClient.frame(2, [1]))
            try readBurst(client)
        }
    }

    @Test func aBurstSentInOnePassArrivesWholeAndInOrderOverWSS() throws {
        let server = try tlsServer()
        let client = try tlsClient(server)
        #expect(try client.upgrade(path: "/burst").status == 101)
        for _ in 0..<2 {
            try client.send(TestClient.frame(2, [1]))
            try readBurst(client)
        }
    }

    @Test func twoConnectionsWrittenInTurnEachGetTheirOwnBytesInOrder() throws {
        for secure in [false, true] {
            let server = secure ? try tlsServer() : try TestServer(routes: Self.routes)
            let first = secure ? try tlsClient(server) : try server.client()
            #expect(try first.upgrade(path: "/pair").status == 101)
            let second = secure ? try tlsClient(server) : try server.client()
            #expect(try second.upgrade(path: "/pair").status == 101)
            try second.send(TestClient.frame(2, [1]))
            try readBurst(first)
            try readBurst(second)
        }
    }

    @Test func framesSentBeforeAServerCloseGoOutBeforeTheClose() throws {
        for secure in [false, true] {
            let routes: (inout Router.Builder) -> Void = { routes in
                routes.webSocket("/last-words", name: "last-words") { _, _ in LastWords() }
            }
            let server: TestServer
            if secure {
                let certificates = try TestCertificates.get()
                server = try TestServer({ config in
                    config.tlsCertificateFile = certificates.serverCertificate
                    config.tlsKeyFile = certificates.serverKey
                }, routes: routes)
            } else {
                server = try TestServer(routes: routes)
            }
            let client = secure ? try tlsClient(server) : try server.client()
            #expect(try client.upgrade(path: "/last-words").status == 101)
            try client.send(TestClient.frame(1, Array("bye".utf8)))
            for i in 0..<3 { #expect(try client.readFrame().payload == Array("word \(i)".utf8)) }
            #expect(try client.readClose() == 1000)
        }
    }

    /// A stream dropped by its producer (`abort`, as a fault injection does) still delivers what it
    /// wrote before, as it did when every chunk went out at once.
    @Test func chunksWrittenBeforeAnAbortArriveBeforeTheEnd() throws {
        let server = try TestServer(routes: { routes in
            routes.stream("GET", "/partial") { _, stream in
                stream.write("hello")
                stream.write("world")
                stream.abort()
            }
        })
        let client = try server.client()
        try client.send("GET /partial HTTP/1.1\r\nHost: localhost\r\n\r\n")
        var received: [UInt8] = []
        while let byte = try? client.read(count: 1) { received += byte }
        let text = String(decoding: received, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200"))
        #expect(text.hasSuffix("5\r\nhello\r\n5\r\nworld\r\n"))
    }

    final class LastWords: WebSocketHandler {
        func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
            for i in 0..<3 { socket.send(text: "word \(i)") }
            socket.close(.normal)
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.send(String(repeating: "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 5) + "GET /nowhere HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        for _ in 0..<5 { #expect(try client.readResponse().status == 200) }
        #expect(try client.readResponse().status == 404)
        #expect(client.readsEOF())
    }
}
