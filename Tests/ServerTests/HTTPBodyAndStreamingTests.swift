import Glibc
import Synchronization
import Testing
@testable import Server
import TestSupport

/// Request bodies and streamed responses: what `parley mock-llm` and the LLM client stand on.
@Suite struct HTTPBodyAndStreamingTests {
    static let closedEarly = Atomic<Int>(0)

    func server(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) throws -> TestServer {
        try TestServer(adjust, routes: { routes in
            routes.post("/upload") { request in
                HTTPResponse(status: .ok, contentType: "text/plain", body: "got \(request.body.count): " + String(decoding: request.body, as: UTF8.self))
            }
            routes.stream("GET", "/count") { request, stream in
                let limit = request.queryValue("n").flatMap { Int($0) } ?? 3
                stream.start(.ok, headers: [("Content-Type", "text/event-stream")])
                stream.onClose = { _ = HTTPBodyAndStreamingTests.closedEarly.add(1, ordering: .relaxed) }
                var sent = 0
                func tick() {
                    sent += 1
                    stream.write("data: \(sent)\n\n")
                    if sent == limit { stream.end() } else { stream.loop.schedule(after: 0.01, tick) }
                }
                tick()
            }
        })
    }

    @Test func postBodyArrivingInPiecesReachesTheHandler() throws {
        let server = try server()
        let client = try server.client()
        try client.send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello")
        usleep(20_000)
        try client.send(" world")
        let response = try client.readResponse()
        #expect(response.status == 200 && response.body == "got 11: hello world")
        // Keep-alive continues after a body.
        try client.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(try client.readResponse().status == 200)
    }

    @Test func bodiesOverTheLimitGet413AndChunkedUploadsGet411() throws {
        let server = try server { $0.maxBodyBytes = 100 }
        let big = try server.client()
        try big.send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n")
        #expect(try big.readResponse().status == 413)
        let chunked = try server.client()
        try chunked.send("POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
        #expect(try chunked.readResponse().status == 411)
        let wrongMethod = try server.client()
        try wrongMethod.send("GET /upload HTTP/1.1\r\nHost: a\r\n\r\n")
        let refused = try wrongMethod.readResponse()
        #expect(refused.status == 405 && refused.headers["allow"] == "POST")
    }

    @Test func streamedResponseArrivesChunkByChunkThenThePipelinedRequestIsServed() throws {
        let server = try server()
        let client = try server.client()
        // The second request is sent at once; it must wait for the stream to end.
        try client.send("GET /count?n=4 HTTP/1.1\r\nHost: a\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
        let streamed = try client.readChunkedResponse()
        #expect(streamed.status == 200 && streamed.headers["content-type"] == "text/event-stream")
        #expect(streamed.chunks == ["data: 1\n\n", "data: 2\n\n", "data: 3\n\n", "data: 4\n\n"])
        #expect(try client.readResponse().body == "ok\n")
    }

    @Test func producerHearsWhenTheClientLeavesMidStream() throws {
        let server = try server()
        let before = Self.closedEarly.load(ordering: .relaxed)
        let client = try server.client()
        try client.send("GET /count?n=1000 HTTP/1.1\r\nHost: a\r\n\r\n")
        _ = try client.readLine()
        client.hangUp()
        var heard = false
        for _ in 0..<300 where !heard {
            heard = Self.closedEarly.load(ordering: .relaxed) > before
            usleep(10_000)
        }
        #expect(heard)
        #expect(server.metric("parley_connections_open{endpoint=\"http\"}", becomes: 0))
    }
}
