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
        // The "listening" line comes once the HTTP port is bound; each loop opens SIP's as it starts.
        #expect(RedisServer.waitUntil(seconds: 10) { RedisServer.accepts(sip) && RedisServer.accepts(tls) }, "SIP's ports did not open")
        return (server, sip, tls)
    }

    static func options(_ n: Int, transport: String) -> [UInt8] {
        Array(("OPTIONS sip:parley@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/\(transport) 127.0.0.1:5070;branch=z9hG4bK-options-\(n)\r\n"
            + "From: <sip:tester@127.0.0.1>;tag=t\(n)\r\nTo: <sip:parley@127.0.0.1>\r\nCall-ID: options-\(n)@test\r\n"
            + "CSeq: \(n) OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n").utf8)
    }

    /// A blocking TCP connection to loopback `port`, with a 10 s receive time-out.
    final class Stream {
        let fd: Int32
        var tls: TLSStream?
        private var received: [UInt8] = []

        init(port: Int) throws {
            fd = try Sys.streamSocket(family: AF_INET, .blocking)
            do {
                _ = try Sys.connect(fd, to: .ipv4(127, 0, 0, 1, port: UInt16(port)))
            } catch {
                Sys.close(fd)
                throw error
            }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(fd) }

        func startTLS(caFile: String) throws {
            let session = try TLSStream(context: try TLSContext.client(caFile: caFile), fd: fd, serverName: "localhost")
            // A blocking socket: the handshake runs to its end in one call.
            guard case .transferred = session.handshake() else { throw SystemError("the TLS handshake failed") }
            tls = session
        }

        func send(_ bytes: [UInt8]) {
            if let tls {
                _ = bytes.withUnsafeBytes { tls.write($0) }
            } else {
                _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
            }
        }

        /// Bytes until the peer closes or nothing comes for the time-out.
        private func readMore() -> Bool {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count: Int = buffer.withUnsafeMutableBytes { raw in
                if let tls {
                    if case .transferred(let count) = tls.read(into: raw) { return count }
                    return 0
                }
                return recv(fd, raw.baseAddress, raw.count, 0)
            }
            guard count > 0 else { return false }
            received += buffer[..<count]
            return true
        }

        /// The next whole message's head (its body is empty here), nil if the connection ended first.
        func nextMessage() -> String? {
            while true {
                if let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                    let head = String(decoding: received[..<end.upperBound], as: UTF8.self)
                    received.removeSubrange(..<end.upperBound)
                    return head
                }
                guard readMore() else { return nil }
            }
        }

        /// True once the server has closed the connection.
        func closedByPeer() -> Bool { !readMore() && nextMessage() == nil }
    }

    @Test func optionsOverTCPIsAnsweredOnItsConnectionHoweverTheBytesAreWritten() throws {
        let (server, sip, _) = try Self.server()
        let stream = try Stream(port: sip)
        // Two messages in one write, then one in two writes split inside its head.
        stream.send(Self.options(1, transport: "TCP") + Self.options(2, transport: "TCP"))
        let third = Self.options(3, transport: "TCP")
        stream.send(Array(third[..<40]))
        let first = try #require(stream.nextMessage(), "no answer to the first OPTIONS")
        stream.send(Array(third[40...]))
        let second = try #require(stream.nextMessage(), "no answer to the second OPTIONS")
        let last = try #require(stream.nextMessage(), "no answer to the OPTIONS written in two pieces")
        for (n, answer) in [first, second, last].enumerated() {
            #expect(answer.hasPrefix("SIP/2.0 200"), "\(answer)")
            #expect(answer.contains("CSeq: \(n + 1) OPTIONS"), "\(answer)")
            #expect(answer.contains("SIP/2.0/TCP"), "\(answer)")
        }
        withExtendedLifetime(server) {}
    }

    @Test func aStreamThatCannotBeFramedIsClosedAndThePortGoesOn() throws {
        let (server, sip, _) = try Self.server()
        let broken = try Stream(port: sip)
        broken.send(Array("OPTIONS sip:parley@127.0.0.1 SIP/2.0\r\nContent-Length: lots\r\n\r\n".utf8))
        #expect(broken.closedByPeer(), "a stream that cannot be framed was left open")
        let next = try Stream(port: sip)
        next.send(Self.options(7, transport: "TCP"))
        let answer = try #require(next.nextMessage(), "the port did not answer after a broken stream")
        #expect(answer.hasPrefix("SIP/2.0 200"), "\(answer)")
        withExtendedLifetime(server) {}
    }

    @Test func optionsOverTLSIsAnsweredWithTheServersCertificate() throws {
        let (server, _, tls) = try Self.server()
        let stream = try Stream(port: tls)
        try stream.startTLS(caFile: try TestCertificates.get().caCertificate)
        stream.send(Self.options(1, transport: "TLS"))
        let answer = try #require(stream.nextMessage(), "no answer over TLS")
        #expect(answer.hasPrefix("SIP/2.0 200"), "\(answer)")
        #expect(answer.contains("SIP/2.0/TLS"), "\(answer)")
        withExtendedLifetime(server) {}
    }
}
