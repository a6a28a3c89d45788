import Glibc
import Testing
@testable import Server
import TestSupport
@testable import Upstream
import TLS

/// The loop's HTTP client against an https upstream: a TLS server streams server-sent events, and a
/// plain server's `/fetch` route relays them through `stream.loop.httpClient`.
@Suite struct HTTPSClientTests {
    let certificates: TestCertificates

    init() throws {
        certificates = try TestCertificates.get()
    }

    /// The https upstream: `/count` streams `n` events.
    func upstream(host: String = "127.0.0.1") throws -> TestServer {
        let certificates = certificates
        return try TestServer({ config in
            config.host = host
            config.tlsCertificateFile = certificates.serverCertificate
            config.tlsKeyFile = certificates.serverKey
        }, routes: { routes in
            routes.stream("GET", "/count") { request, stream in
                let limit = request.queryValue("n").flatMap { Int($0) } ?? 3
                stream.start(.ok, headers: [("Content-Type", "text/event-stream")])
                for i in 1...limit { stream.write("data: \(i)\n\n") }
                stream.end()
            }
        })
    }

    /// The client side: `/fetch?url=...` fetches the URL and answers with what came back, or the error.
    func fetcher(trusting ca: String?) throws -> TestServer {
        let trust = try TLSContext.client(caFile: ca)
        return try TestServer({ $0.loopStarted = { HTTPClient.install(on: $0, tls: trust) } }, routes: { routes in
            routes.stream("GET", "/fetch") { request, stream in
                let target = request.queryValue("url").map(String.init) ?? ""
                var body = ""
                stream.loop.httpClient.send(HTTPClientRequest(method: "GET", url: UpstreamURL(target)!), onHead: { head in
                    body += "status \(head.status);"
                }, onBody: { bytes in
                    body += String(decoding: bytes, as: UTF8.self)
                }, onEnd: { result in
                    if case .failure(let error) = result { body += "error: \(error)" }
                    stream.start(.ok)
                    stream.write(body)
                    stream.end()
                })
            }
        })
    }

    func fetch(_ fetcher: TestServer, _ url: String) throws -> String {
        let client = try fetcher.client()
        try client.send("GET /fetch?url=\(url) HTTP/1.1\r\nHost: a\r\n\r\n")
        return try client.readChunkedResponse().chunks.joined()
    }

    @Test func fetchesFromAnHTTPSUpstreamTrustedThroughTheExtraCA() throws {
        let upstream = try upstream()
        let fetcher = try fetcher(trusting: certificates.caCertificate)
        let text = try fetch(fetcher, "https://127.0.0.1:\(upstream.port)/count?n=4")
        #expect(text == "status 200;data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n")
        // The pooled TLS connection serves the next requests: one handshake for all three.
        #expect(try fetch(fetcher, "https://127.0.0.1:\(upstream.port)/count?n=1").hasSuffix("data: 1\n\n"))
        #expect(try fetch(fetcher, "https://127.0.0.1:\(upstream.port)/count?n=2").hasSuffix("data: 2\n\n"))
        #expect(upstream.metric("parley_tls_handshakes_total{result=\"ok\"}") == 1)
    }

    @Test func anUntrustedCertificateIsAClearError() throws {
        let upstream = try upstream()
        let fetcher = try fetcher(trusting: nil)
        let text = try fetch(fetcher, "https://127.0.0.1:\(upstream.port)/count")
        #expect(text == "error: 127.0.0.1: TLS handshake: certificate verify failed (unable to get local issuer certificate)")
    }

    @Test func aCertificateForAnotherNameIsRefused() throws {
        // The certificate names only localhost and 127.0.0.1.
        let upstream = try upstream(host: "127.0.0.2")
        let fetcher = try fetcher(trusting: certificates.caCertificate)
        let text = try fetch(fetcher, "https://127.0.0.2:\(upstream.port)/count")
        #expect(text.contains("IP address mismatch"), "\(text)")
    }

    @Test func aPlainHTTPServerBehindAnHTTPSURLFailsTheHandshake() throws {
        let plain = try TestServer()
        let fetcher = try fetcher(trusting: certificates.caCertificate)
        let text = try fetch(fetcher, "https://127.0.0.1:\(plain.port)/healthz")
        #expect(text.hasPrefix("error: 127.0.0.1: TLS handshake"), "\(text)")
    }
}
