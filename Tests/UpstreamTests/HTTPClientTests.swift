import Glibc
import Synchronization
import Testing
@testable import Server
import TestSupport
@testable import Upstream
import Loop

/// The loop's HTTP client against real sockets: a `/proxy` route fetches another route of the same
/// server through `stream.loop.httpClient` and relays what arrives, chunk by chunk.
@Suite struct HTTPClientTests {
    static let cancelledUpstreams = Atomic<Int>(0)

    func server() throws -> TestServer {
        try TestServer({ $0.loops = 1 }, routes: { routes in
            routes.stream("GET", "/count") { request, stream in
                let limit = request.queryValue("n").flatMap { Int($0) } ?? 3
                let delay = request.queryValue("delay").flatMap { Double($0) } ?? 0.005
                stream.start(.ok, headers: [("Content-Type", "text/event-stream")])
                stream.onClose = { _ = HTTPClientTests.cancelledUpstreams.add(1, ordering: .relaxed) }
                var sent = 0
                func tick() {
                    sent += 1
                    stream.write("data: \(sent)\n\n")
                    if sent == limit { stream.end() } else { stream.loop.schedule(after: delay, tick) }
                }
                stream.loop.schedule(after: delay, tick)
            }
            routes.stream("GET", "/stall") { _, stream in
                stream.onClose = {}
                _ = stream  // never answers
            }
            routes.stream("GET", "/proxy") { request, stream in
                let port = request.queryValue("port").flatMap { Int($0) } ?? 0
                let path = request.queryValue("path").map(String.init) ?? "/count"
                var upstream = HTTPClientRequest(method: "GET", url: UpstreamURL("http://127.0.0.1:\(port)\(path.replacingSlashes)")!)
                upstream.timeouts.firstByte = 0.3
                var parser = ServerSentEventParser()
                let call = stream.loop.httpClient.send(upstream, onHead: { head in
                    stream.start(.ok, headers: [("X-Upstream-Status", String(head.status))])
                }, onBody: { bytes in
                    for event in (try? parser.feed(bytes)) ?? [] { stream.write("relayed \(event.data);") }
                }, onEnd: { result in
                    switch result {
                    case .success: stream.write("end")
                    case .failure(let error): stream.start(.badGateway); stream.write("error: \(error)")
                    }
                    stream.end()
                })
                stream.onClose = { call.cancel() }
            }
        })
    }

    func proxy(_ server: TestServer, _ client: TestClient, path: String, port: Int? = nil) throws -> (status: Int, headers: [String: String], text: String) {
        try client.send("GET /proxy?port=\(port ?? server.port)&path=\(path) HTTP/1.1\r\nHost: a\r\n\r\n")
        let response = try client.readChunkedResponse()
        return (response.status, response.headers, response.chunks.joined())
    }

    @Test func streamsAnUpstreamResponseAsItArrivesAndReusesTheConnection() throws {
        let server = try server()
        let client = try server.client()
        for round in 1...3 {
            let result = try proxy(server, client, path: "/count?n=\(round + 2)")
            #expect(result.status == 200 && result.headers["x-upstream-status"] == "200")
            #expect(result.text == (1...(round + 2)).map { "relayed \($0);" }.joined() + "end")
        }
        // One upstream connection served all three requests (plus this test's own): keep-alive.
        #expect(server.metric("parley_connections_accepted_total") == 2)
    }

    @Test func refusedConnectionBecomesAnError() throws {
        let server = try server()
        // A port nobody listens on: bind one, close it.
        let probe = try Sys.streamSocket(family: AF_INET, .blocking)
        try Sys.bind(probe, to: .ipv4(127, 0, 0, 1, port: 0))
        let port = try Sys.localAddress(probe).port
        Sys.close(probe)
        let result = try proxy(server, try server.client(), path: "/count", port: port)
        #expect(result.status == 502 && result.text.contains("cannot connect"))
    }

    @Test func silentUpstreamHitsTheFirstByteTimeout() throws {
        let server = try server()
        let result = try proxy(server, try server.client(), path: "/stall")
        #expect(result.status == 502 && result.text.contains("first-byte"))
    }

    @Test func cancellingAbortsTheUpstreamRequest() throws {
        let server = try server()
        let before = Self.cancelledUpstreams.load(ordering: .relaxed)
        let client = try server.client()
        try client.send("GET /proxy?port=\(server.port)&path=/count?n=100000%26delay=0.01 HTTP/1.1\r\nHost: a\r\n\r\n")
        _ = try client.readLine()
        client.hangUp()  // the proxy's client leaves; the proxy cancels; the upstream hears it
        var heard = false
        for _ in 0..<300 where !heard {
            heard = Self.cancelledUpstreams.load(ordering: .relaxed) > before
            usleep(10_000)
        }
        #expect(heard)
    }
}

private extension String {
    /// The test passes upstream paths in a query; `%26` stands for `&` there.
    var replacingSlashes: String { split(separator: "%26", omittingEmptySubsequences: false).joined(separator: "&") }
}
