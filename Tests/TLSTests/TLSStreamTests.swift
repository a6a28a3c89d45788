import Testing
import Loop
import TLS
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// One TLS session each side of a connected pair of non-blocking sockets, driven by hand as a loop
/// drives them: the handshake by its want-read/want-write answers, a message read through
/// `TLSOrSocketSource` by the loop's one read loop, and the ends of a session (close_notify, a
/// certificate the client does not trust).
@Suite struct TLSStreamTests {
    let certificates: TestCertificates

    init() throws { certificates = try TestCertificates.get() }

    /// A connected pair of non-blocking Unix stream sockets: OpenSSL reads and writes descriptors,
    /// so any stream socket carries it.
    final class SocketPair {
        let server: Int32
        let client: Int32

        init() throws {
            var fds: [Int32] = [-1, -1]
            let made = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds)
            guard made == 0 else { throw SystemError("socketpair") }
            server = fds[0]
            client = fds[1]
        }

        deinit {
            Sys.close(server)
            Sys.close(client)
        }
    }

    func contexts(ca: String? = nil) throws -> (server: TLSContext, client: TLSContext) {
        (try TLSContext.server(certificateFile: certificates.serverCertificate, keyFile: certificates.serverKey),
         try TLSContext.client(caFile: ca ?? certificates.caCertificate))
    }

    /// Steps both handshakes until neither is waiting; each side's last outcome.
    func handshake(_ server: TLSStream, _ client: TLSStream) -> (server: TLSStream.Outcome, client: TLSStream.Outcome) {
        var outcomes: (server: TLSStream.Outcome, client: TLSStream.Outcome) = (.wantRead, .wantRead)
        for _ in 0..<20 {
            outcomes.client = client.handshake()
            outcomes.server = server.handshake()
            if case .failed = outcomes.client { break }
            let waiting: (TLSStream.Outcome) -> Bool = { $0 == .wantRead || $0 == .wantWrite }
            if !waiting(outcomes.server) && !waiting(outcomes.client) { break }
        }
        return outcomes
    }

    @Test func aTrustedServerIsReachedAndItsRecordsReadUntilDrained() throws {
        let pair = try SocketPair()
        let (serverContext, clientContext) = try contexts()
        let server = try TLSStream(context: serverContext, fd: pair.server)
        let client = try TLSStream(context: clientContext, fd: pair.client, serverName: "localhost")
        let outcomes = handshake(server, client)
        #expect(outcomes.server == .transferred(0) && outcomes.client == .transferred(0))
        #expect(server.isEstablished && client.isEstablished && client.protocolVersion == "TLSv1.3")

        // Three records: a TLS read returns one at a time, so a short read must not end the drain.
        let messages = ["first", "second record", "third"].map { Array($0.utf8) }
        for message in messages {
            #expect(message.withUnsafeBytes { client.write($0) } == .transferred(message.count))
        }
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        var source = TLSOrSocketSource(fd: pair.server, tls: server)
        #expect(!source.shortReadDrains)
        var received: [UInt8] = []
        let outcome = loop.readUntilDrained(from: &source) { bytes in
            received += bytes
            return .readOn
        }
        #expect(outcome == .drained && received == messages.flatMap { $0 } && !source.needsWritable)

        // The client's close_notify ends the server's stream.
        client.shutdown()
        #expect(loop.readUntilDrained(from: &source) { _ in .readOn } == .endOfFile)
    }

    @Test func aPlainSocketReadsDirectlyAndAShortReadDrainsIt() throws {
        let pair = try SocketPair()
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        var source = TLSOrSocketSource(fd: pair.server, tls: nil)
        #expect(source.shortReadDrains)
        Array("plain".utf8).withUnsafeBytes { Sys.writeAll(pair.client, $0) }
        var received: [UInt8] = []
        #expect(loop.readUntilDrained(from: &source) { received += $0; return .readOn } == .drained)
        #expect(received == Array("plain".utf8))
    }

    @Test func aServerSignedByAnotherCAFailsTheClientsHandshake() throws {
        let pair = try SocketPair()
        let (serverContext, clientContext) = try contexts(ca: certificates.otherCACertificate)
        let server = try TLSStream(context: serverContext, fd: pair.server)
        let client = try TLSStream(context: clientContext, fd: pair.client, serverName: "localhost")
        guard case .failed(let error) = handshake(server, client).client else {
            Issue.record("the client's handshake did not fail")
            return
        }
        #expect(error.description.contains("certificate verify failed"))
        #expect(!client.isEstablished)
    }

    @Test func aNameTheCertificateDoesNotCoverFailsTheClientsHandshake() throws {
        let pair = try SocketPair()
        let (serverContext, clientContext) = try contexts()
        let server = try TLSStream(context: serverContext, fd: pair.server)
        let client = try TLSStream(context: clientContext, fd: pair.client, serverName: "elsewhere.example")
        guard case .failed = handshake(server, client).client else {
            Issue.record("the client's handshake did not fail")
            return
        }
    }

    @Test func aMissingCertificateOrAMismatchedKeyIsATLSErrorNamingTheFile() throws {
        #expect {
            _ = try TLSContext.server(certificateFile: "/nonexistent/cert.pem", keyFile: certificates.serverKey)
        } throws: { ($0 as? TLSError)?.description.contains("/nonexistent/cert.pem") == true }
        #expect {
            _ = try TLSContext.server(certificateFile: certificates.serverCertificate, keyFile: certificates.otherServerKey)
        } throws: { ($0 as? TLSError)?.description.contains(certificates.otherServerKey) == true }
    }
}
