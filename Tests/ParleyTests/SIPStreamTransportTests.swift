import Glibc
import Loop
import Testing
import TestSupport
import TLS

/// SIP over TCP and TLS (RFC 3261 section 18.3) on a real `parley serve`, served on the server's own
/// connections: messages framed by Content-Length whatever the writes' boundaries, answered on the
/// connection they came on; a stream that cannot be framed is closed and the port goes on; TLS
/// with the server's certificate.
@Suite(.serialized) struct SIPStreamTransportTests {
    /// A server with SIP on a UDP and TCP port and a TLS port, all on loopback.
    static func server() throws -> (ServerProcess, sip: Int, tls: Int) {
        let certificates = try TestCertificates.get()
        let sip = try RedisServer.freePort(), tls = try RedisServer.freePort()
        let server = try ServerProcess(arguments: "--sip-port \(sip) --sip-host 127.0.0.1 --sip-tls-port \(tls) "
                                       + "--tls-cert \(certificates.serverCertificate) --tls-key \(certificates.serverKey)")
        // The "listening" line comes once every loop runs, with SIP's ports open: no wait.
        #expect(RedisServer.accepts(sip) && RedisServer.accepts(tls), "SIP's ports were not open when the server said it was listening")
        return (server, sip, tls)
    }

    static func options(_ n: Int, transport: String) -> [UInt8] {
        Array(("OPTIONS sip:parley@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/\(transport) 127.0.0.1:5070;branch=z9hG4bK-options-\(n)\r\n"
            + "From: <sip:tester@127.0.0.1>;tag=t\(n)\r\nTo: <sip:parley@127.0.0.1>\r\nCall-ID: options-\(n)@test\r\n"
            + "CSeq: \(n) OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n").utf8)
    }

    @Test func optionsOverTCPIsAnsweredOnItsConnectionHoweverTheBytesAreWritten() throws {
        let (server, sip, _) = try Self.server()
        // TestClient reads a SIP response as it reads an HTTP one: a status line, headers, a body of Content-Length.
        let stream = try TestClient(port: sip, timeoutSeconds: 10)
        // Two messages in one write, then one in two writes split inside its head.
        try stream.send(Self.options(1, transport: "TCP") + Self.options(2, transport: "TCP"))
        let third = Self.options(3, transport: "TCP")
        try stream.send(Array(third[..<40]))
        let first = try stream.readResponse()
        try stream.send(Array(third[40...]))
        let answers = [first, try stream.readResponse(), try stream.readResponse()]
        for (n, answer) in answers.enumerated() {
            #expect(answer.status == 200, "\(answer)")
            #expect(answer.headers["cseq"] == "\(n + 1) OPTIONS", "\(answer)")
            #expect(answer.headers["via"]?.hasPrefix("SIP/2.0/TCP") == true, "\(answer)")
        }
        withExtendedLifetime(server) {}
    }

    @Test func aStreamThatCannotBeFramedIsClosedAndThePortGoesOn() throws {
        let (server, sip, _) = try Self.server()
        let broken = try TestClient(port: sip, timeoutSeconds: 10)
        try broken.send("OPTIONS sip:parley@127.0.0.1 SIP/2.0\r\nContent-Length: lots\r\n\r\n")
        #expect(broken.readsEOF(), "a stream that cannot be framed was left open")
        let next = try TestClient(port: sip, timeoutSeconds: 10)
        try next.send(Self.options(7, transport: "TCP"))
        #expect(try next.readResponse().status == 200)
        withExtendedLifetime(server) {}
    }

    @Test func optionsOverTLSIsAnsweredWithTheServersCertificate() throws {
        let (server, _, tls) = try Self.server()
        let stream = try TestClient(port: tls, timeoutSeconds: 10, tls: try TLSContext.client(caFile: try TestCertificates.get().caCertificate))
        try stream.send(Self.options(1, transport: "TLS"))
        let answer = try stream.readResponse()
        #expect(answer.status == 200, "\(answer)")
        #expect(answer.headers["via"]?.hasPrefix("SIP/2.0/TLS") == true, "\(answer)")
        withExtendedLifetime(server) {}
    }
}
