import Glibc
import Testing
@testable import Server
import TestSupport

/// Plain HTTP over real sockets.
@Suite struct HTTPServingTests {
    @Test func healthzAnswersAndKeepsTheConnectionAlive() throws {
        let server = try TestServer()
        let client = try server.client()
        for _ in 0..<3 {
            try client.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200 && response.body == "ok\n")
            #expect(response.headers["connection"] == nil)
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /nope HTTP/1.1\r\nHost: a\r\n\r\nHEAD /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(try client.readResponse().status == 404)
        try client.send("GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        #expect(try client.read(count: 12) == Array("HTTP/1.1 200".utf8))  // HEAD: a head without body
    }

    @Test func metricsSpeakPrometheusText() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.send("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        for series in ["parley_connections_open{endpoint=\"http\"} 1", "parley_connections_open{endpoint=\"echo\"} 0",
                       "parley_connections_accepted_total 1", "parley_process_resident_memory_bytes",
                       "parley_resident_bytes_per_connection", "parley_accounted_bytes_per_connection",
                       "parley_loop_iteration_seconds_bucket{le=\"+Inf\"}", "parley_connections_refused_total{reason=\"descriptor_limit\"} 0",
                       "# TYPE parley_loop_iteration_seconds histogram", "# TYPE parley_process_cpu_seconds_total counter",
                       // Only the scrape is open: no sessions, so no per-session figure.
                       "parley_resident_bytes_per_connection 0\n", "parley_accounted_bytes_per_connection 0\n"] {
            #expect(response.body.contains(series), "missing \(series)")
        }
        // The process has run its loops and this test: some CPU time, and a plain number.
        let cpu = response.body.split(separator: "\n").first { $0.hasPrefix("parley_process_cpu_seconds_total ") }
        #expect((cpu?.split(separator: " ").last.flatMap { Double($0) } ?? 0) > 0)
    }

    @Test func unknownPathGets404AndWrongMethodGets405() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.send("GET /missing HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(try client.readResponse().status == 404)
        try client.send("DELETE /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 405 && response.headers["allow"] == "GET, HEAD")
    }

    @Test func malformedRequestGets400AndTheConnectionCloses() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.send("GET / HTTP/1.1\r\nHost : a\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 400 && response.headers["connection"] == "close")
        #expect(client.readsEOF())
    }

    @Test func oversizedHeadersGet431() throws {
        let server = try TestServer { $0.maxHeadBytes = 2048 }
        let client = try server.client()
        try client.send("GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + String(repeating: "b", count: 4096) + "\r\n\r\n")
        #expect(try client.readResponse().status == 431)
    }

    @Test func slowClientLosesItsSlotAtTheHandshakeDeadline() throws {
        let server = try TestServer { $0.handshakeTimeout = 0.3 }
        let client = try server.client()
        try client.send("GET /echo HTTP/1.1\r\nHost: a\r\n")  // and never finishes
        #expect(client.readsEOF())
        #expect(server.metric("parley_connections_open{endpoint=\"http\"}", becomes: 0))
    }

    @Test func sessionsPastTheLimitGet503ButMetricsStillAnswer() throws {
        let server = try TestServer { $0.maxConnections = 2 }
        let a = try server.client(), b = try server.client()
        #expect(try a.upgrade().status == 101)
        #expect(try b.upgrade().status == 101)
        let c = try server.client()
        let refused = try c.upgrade()
        #expect(refused.status == 503 && refused.headers["retry-after"] == "1")
        let scrape = try server.client()
        try scrape.send("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n")
        let metrics = try scrape.readResponse()
        #expect(metrics.status == 200)
        #expect(metrics.body.contains("parley_connections_refused_total{reason=\"connection_limit\"} 1"))
        // A session that ends frees its slot.
        try a.send(TestClient.frame(0x8, [0x03, 0xE8]))
        _ = try a.readClose()
        a.hangUp()
        #expect(server.metric("parley_connections_open{endpoint=\"echo\"}", becomes: 1))
        #expect(try server.client().upgrade().status == 101)
    }
}

/// Per client address: connections held and opened a second, refused with 429 before anything else.
@Suite struct AddressLimitTests {
    @Test func aThirdConnectionFromOneAddressGets429UntilOneCloses() throws {
        let server = try TestServer({ $0.maxConnectionsPerAddress = 2 })
        let a = try server.client(), b = try server.client()
        #expect(try a.upgrade().status == 101 && b.upgrade().status == 101)
        let c = try server.client()
        try c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let refused = try c.readResponse()
        #expect(refused.status == 429 && refused.headers["retry-after"] == "1" && refused.body.contains("rate_limit_exceeded"))
        a.hangUp()
        #expect(server.metric("parley_connections_open{endpoint=\"echo\"}", becomes: 1))
        #expect(try server.client().upgrade().status == 101)
        #expect((server.metric("parley_connections_refused_total{reason=\"address_connections\"}") ?? 0) == 1)
    }

    @Test func connectingFasterThanTheRateGets429() throws {
        let server = try TestServer({ $0.connectsPerSecondPerAddress = 3 })
        var statuses: [Int] = []
        for _ in 0..<5 {
            let client = try server.client()
            try client.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            statuses.append(try client.readResponse().status)
        }
        #expect(statuses.prefix(3).allSatisfy { $0 == 200 } && statuses.suffix(2).allSatisfy { $0 == 429 }, "\(statuses)")
        #expect((server.metric("parley_connections_refused_total{reason=\"address_rate\"}") ?? 0) == 2)
    }
}
