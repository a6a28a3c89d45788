import Glibc
import Testing
@testable import Server
import TestSupport
import Loop
@testable import TLS

/// The server's TLS over real sockets, with certificates made by the openssl CLI at test time.
@Suite struct TLSServingTests {
    let certificates: TestCertificates

    init() throws {
        certificates = try TestCertificates.get()
    }

    func server(_ adjust: @escaping (inout ServerConfiguration) -> Void = { _ in }) throws -> TestServer {
        let certificates = certificates
        return try TestServer({ config in
            config.tlsCertificateFile = certificates.serverCertificate
            config.tlsKeyFile = certificates.serverKey
            adjust(&config)
        })
    }

    func trustingClient(_ server: TestServer, ca: String? = nil, serverName: String = "localhost") throws -> TestClient {
        try TestClient(port: server.port, tls: TLSContext.client(caFile: ca ?? certificates.caCertificate), serverName: serverName)
    }

    func echo(_ client: TestClient, _ payload: [UInt8], opcode: UInt8 = 2) throws -> [UInt8] {
        try client.send(TestClient.frame(opcode, payload))
        let frame = try client.readFrame()
        #expect(frame.opcode == opcode)
        return frame.payload
    }

    @Test func wssRoundTripsSmallAndMultiRecordMessages() throws {
        let server = try server()
        let client = try trustingClient(server)
        #expect(client.tls?.negotiatedProtocol == "http/1.1")
        #expect(client.tls?.protocolVersion == "TLSv1.3")
        #expect(try client.upgrade().status == 101)
        #expect(try echo(client, Array("hello over TLS".utf8), opcode: 1) == Array("hello over TLS".utf8))
        // Larger than one TLS record (16 KiB) each way, and than one read of the loop's buffer.
        var random = SeededRandom(seed: 7)
        let big = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        #expect(try echo(client, big) == big)
        try client.send(TestClient.frame(8, [0x03, 0xE8]))
        #expect(try client.readClose() == 1000)
        // A clean TLS shutdown: the server's close_notify, not a bare end of the TCP stream.
        var rest = [UInt8](repeating: 0, count: 64)
        #expect(rest.withUnsafeMutableBytes { client.tls!.read(into: $0) } == .closed)
        #expect(server.metric("parley_tls_handshakes_total{result=\"ok\"}") == 1)
    }

    @Test func httpsServesPlainRoutesWithKeepAlive() throws {
        let server = try server()
        let client = try trustingClient(server)
        for _ in 0..<3 {
            try client.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200 && response.body == "ok\n")
        }
    }

    @Test func aClientThatDoesNotTrustTheCARefusesTheServer() throws {
        let server = try server()
        #expect {
            _ = try trustingClient(server, ca: certificates.otherCACertificate)
        } throws: { error in
            "\(error)".contains("certificate verify failed")
        }
        // The client's alert ends the server's side of the handshake too.
        #expect(server.metric("parley_tls_handshakes_total{result=\"failed\"}", becomes: 1))
    }

    @Test func aNameTheCertificateDoesNotCoverIsRefused() throws {
        let server = try server()
        #expect {
            _ = try trustingClient(server, serverName: "api.example.com")
        } throws: { error in
            "\(error)".contains("certificate verify failed") && "\(error)".contains("mismatch")
        }
    }

    @Test func tls12IsServedAndTLS11IsRefusedByTheServer() throws {
        let server = try server()
        let tls12 = try TLSContext.client(caFile: certificates.caCertificate, minimum: .tls12, maximum: .tls12)
        let client = try TestClient(port: server.port, tls: tls12)
        #expect(client.tls?.protocolVersion == "TLSv1.2")
        #expect(try client.upgrade().status == 101)
        // The client really offers TLS 1.1 (security level 0): the refusal is the server's.
        let tls11 = try TLSContext.client(caFile: certificates.caCertificate, minimum: .tls11, maximum: .tls11)
        #expect {
            _ = try TestClient(port: server.port, tls: tls11)
        } throws: { error in
            "\(error)".contains("protocol version")
        }
        #expect(server.metric("parley_tls_handshakes_total{result=\"failed\"}", becomes: 1))
    }

    @Test func renegotiationIsRefusedAndTheServerCarriesOn() throws {
        let server = try server()
        let tls12 = try TLSContext.client(caFile: certificates.caCertificate, minimum: .tls12, maximum: .tls12)
        let client = try TestClient(port: server.port, tls: tls12)
        #expect(try client.upgrade().status == 101)
        let outcome = client.tls!.renegotiate()
        // OpenSSL's server answers a no_renegotiation alert; the client gives up on the session.
        #expect("\(outcome)".contains("no renegotiation"), "\(outcome)")
        // Whatever became of that session, the server serves the next one as before.
        let next = try trustingClient(server)
        #expect(try next.upgrade().status == 101)
        #expect(try echo(next, [7]) == [7])
    }

    @Test func plainHTTPOnTheTLSPortIsClosedAndCountedAsAFailedHandshake() throws {
        let server = try server()
        let client = try TestClient(port: server.port)
        try client.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(client.readsEOF())
        #expect(server.metric("parley_tls_handshakes_total{result=\"failed\"}", becomes: 1))
    }

    @Test func garbageAndBrokenHandshakeRecordsAreClosedAndTheServerGoesOn() throws {
        let server = try server { $0.tlsHandshakeTimeout = 0.3 }
        var random = SeededRandom(seed: 11)
        // Half pure noise, half noise behind a TLS handshake record header, so that OpenSSL's
        // ClientHello parser, not just its record layer, gets to read it.
        let clients = try (0..<40).map { i -> TestClient in
            let client = try TestClient(port: server.port)
            let body = random.bytes(Int.random(in: 1...2000, using: &random))
            let header: [UInt8] = i % 2 == 0 ? [] : [0x16, 0x03, 0x01, UInt8(body.count >> 8), UInt8(body.count & 0xFF), 0x01]
            try client.send(header + body)
            return client
        }
        for client in clients { #expect(client.readsEOF()) }
        #expect(server.metric("parley_tls_handshakes_in_progress", becomes: 0))
        let client = try trustingClient(server)
        #expect(try client.upgrade().status == 101)
        #expect(try echo(client, [1, 2, 3]) == [1, 2, 3])
    }

    @Test func aSilentClientIsDroppedAtTheHandshakeDeadline() throws {
        let server = try server { $0.tlsHandshakeTimeout = 0.3 }
        let client = try TestClient(port: server.port)
        #expect(client.readsEOF())
        #expect(server.metric("parley_tls_handshakes_total{result=\"timeout\"}", becomes: 1))
        #expect(server.metric("parley_tls_handshakes_in_progress") == 0)
    }

    @Test func handshakesPastTheCapAreClosedAtOnceAndTheRestCarryOn() throws {
        let server = try server { $0.maxTLSHandshakes = 2 }
        // Two connections that never say hello hold both handshake places.
        let holders = try (0..<2).map { _ in try TestClient(port: server.port) }
        #expect(server.metric("parley_tls_handshakes_in_progress", becomes: 2))
        let refused = try TestClient(port: server.port)
        #expect(refused.readsEOF())
        #expect(server.metric("parley_connections_refused_total{reason=\"tls_handshake_limit\"}") == 1)
        // Once a place frees, handshakes go through again.
        holders[0].hangUp()
        #expect(server.metric("parley_tls_handshakes_in_progress", becomes: 1))
        let client = try trustingClient(server)
        #expect(try client.upgrade().status == 101)
        _ = holders
    }

    @Test func tlsMemoryIsAccountedWhileOpenAndReleasedOnClose() throws {
        let server = try server()
        let client = try trustingClient(server)
        #expect(try client.upgrade().status == 101)
        #expect(try echo(client, [1, 2, 3]) == [1, 2, 3])
        let tlsSession = server.metric("parley_accounted_bytes") ?? 0
        // The TLS session's state is several KiB; a plain connection accounts for a few hundred bytes.
        #expect(tlsSession > 4000)
        try client.send(TestClient.frame(8, [0x03, 0xE8]))
        _ = try client.readClose()
        client.hangUp()
        #expect(server.metric("parley_accounted_bytes", becomes: 0))
    }

    @Test func reloadServesTheNewCertificateToNewClientsAndKeepsOpenSessions() throws {
        let certificates = certificates
        // The server reads its files at reload: give it copies that the test can replace.
        let certificate = "\(certificates.directory)/reload-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).pem"
        let key = certificate + ".key"
        try copy(certificates.serverCertificate, to: certificate)
        try copy(certificates.serverKey, to: key)
        let server = try TestServer({ config in
            config.tlsCertificateFile = certificate
            config.tlsKeyFile = key
        })
        let before = try trustingClient(server)
        #expect(try before.upgrade().status == 101)

        try copy(certificates.otherServerCertificate, to: certificate)
        try copy(certificates.otherServerKey, to: key)
        try server.server.reloadCertificates()

        #expect(try echo(before, Array("still here".utf8)) == Array("still here".utf8))
        #expect(throws: TLSError.self) { _ = try trustingClient(server) }
        let after = try trustingClient(server, ca: certificates.otherCACertificate)
        #expect(try after.upgrade().status == 101)
        #expect(server.metric("parley_tls_certificate_reloads_total{result=\"ok\"}") == 1)

        // A broken pair is refused, and the certificate in service stays.
        try copy(certificates.serverKey, to: key)
        #expect(throws: TLSError.self) { try server.server.reloadCertificates() }
        #expect(server.metric("parley_tls_certificate_reloads_total{result=\"failed\"}") == 1)
        #expect(try trustingClient(server, ca: certificates.otherCACertificate).upgrade().status == 101)
    }

    @Test func aMissingCertificateFileStopsTheServerFromStarting() throws {
        #expect {
            _ = try TestServer({ $0.tlsCertificateFile = "/nonexistent/cert.pem"; $0.tlsKeyFile = "/nonexistent/key.pem" })
        } throws: { error in
            (error as? TLSError)?.description.contains("/nonexistent/cert.pem") == true
        }
    }

    private func copy(_ source: String, to destination: String) throws {
        guard let input = fopen(source, "r") else { throw SystemError("fopen \(source)") }
        defer { fclose(input) }
        guard let output = fopen(destination, "w") else { throw SystemError("fopen \(destination)") }
        defer { fclose(output) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case let n = fread(&buffer, 1, buffer.count, input), n > 0 { fwrite(buffer, 1, n, output) }
    }
}
