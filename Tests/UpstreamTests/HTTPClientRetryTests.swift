import Glibc
import Synchronization
import Testing
@testable import Server
import TestSupport
import Loop
@testable import Upstream

/// An upstream that answers every request with keep-alive, then closes the connection at once:
/// what an LLM API does to an idle keep-alive connection at the wrong moment.
final class ClosingUpstream: Sendable {
    final class Count: Sendable {
        let value = Atomic<Int>(0)
    }

    let port: Int
    private let fd: Int32
    private let served = Count()

    init() throws {
        let listener = try Sys.streamSocket(family: AF_INET, .blocking)
        try Sys.listen(listener, on: .ipv4(127, 0, 0, 1, port: 0), backlog: 16)
        fd = listener
        port = try Sys.localAddress(listener).port
        let served = self.served
        _ = try Thread.spawn(name: "closing-upstream") {
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                var head: [UInt8] = []
                var byte: UInt8 = 0
                while !head.suffix(4).elementsEqual([13, 10, 13, 10]), recv(client, &byte, 1, 0) == 1 { head.append(byte) }
                let reply = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
                // Counted before the answer goes: counted after, a loaded machine let the test
                // read the second answer and the count before the add.
                served.value.add(1, ordering: .relaxed)
                _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(client)
            }
        }
    }

    var requestsServed: Int { served.value.load(ordering: .relaxed) }

    deinit { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
}

@Suite struct HTTPClientRetryTests {
    @Test func aPooledConnectionClosedUnderARequestIsRetriedOnAFreshOne() throws {
        let upstream = try ClosingUpstream()
        let server = try TestServer({ $0.loops = 1 }, routes: { routes in
            routes.stream("GET", "/twice") { request, stream in
                let url = UpstreamURL("http://127.0.0.1:\(request.queryValue("port")!)/")!
                let client = stream.loop.httpClient
                stream.start()
                client.send(HTTPClientRequest(method: "GET", url: url)) { first in
                    stream.write("first: \(first);")
                    // From inside the first answer's completion, before the upstream's close is
                    // seen: the pooled connection is taken, and the upstream has already closed it.
                    client.send(HTTPClientRequest(method: "GET", url: url)) { second in
                        stream.write("second: \(second); retries: \(client.retries)")
                        stream.end()
                    }
                }
            }
        })
        let client = try server.client()
        try client.send("GET /twice?port=\(upstream.port) HTTP/1.1\r\nHost: a\r\n\r\n")
        let text = try client.readChunkedResponse().chunks.joined()
        #expect(text == "first: success();second: success(); retries: 1")
        #expect(upstream.requestsServed == 2)
    }
}
