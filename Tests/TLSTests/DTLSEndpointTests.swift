import Testing
@testable import TLS
#if canImport(Glibc)
import Glibc
#endif

/// A DTLS client and server endpoint joined in memory, datagrams carried by hand between them as
/// the event loop would carry them: the handshake, the SRTP keys both sides derive, the fingerprint
/// check, application data, retransmission after a lost flight, the close, and garbage.
@Suite struct DTLSEndpointTests {
    /// Two parties, each with its own certificate, each expecting the other's fingerprint unless
    /// told otherwise.
    final class Pair {
        let server: DTLSEndpoint
        let client: DTLSEndpoint
        var serverKeys: SRTPKeyingMaterial?
        var clientKeys: SRTPKeyingMaterial?
        /// Every datagram either side sent, for the MTU check.
        var sent: [[UInt8]] = []

        init(serverExpects: DTLSFingerprint? = nil, clientExpects: DTLSFingerprint? = nil,
             initialRetransmission: Duration = .seconds(1)) throws {
            let serverCertificate = try DTLSCertificate()
            let clientCertificate = try DTLSCertificate()
            server = try DTLSEndpoint(context: DTLSContext(certificate: serverCertificate, role: .server),
                                      remoteFingerprint: serverExpects ?? clientCertificate.fingerprint)
            client = try DTLSEndpoint(context: DTLSContext(certificate: clientCertificate, role: .client),
                                      remoteFingerprint: clientExpects ?? serverCertificate.fingerprint,
                                      initialRetransmission: initialRetransmission)
        }

        /// Carries flights back and forth, starting with `toServer`, until neither side has
        /// anything to say.
        func exchange(_ toServer: [[UInt8]]) throws(DTLSError) {
            var toServer = toServer
            for _ in 0..<10 where !toServer.isEmpty {
                sent += toServer
                var toClient: [[UInt8]] = []
                for datagram in toServer {
                    let output = try server.receive(datagram)
                    toClient += output.datagrams
                    if let keys = output.established { serverKeys = keys }
                }
                sent += toClient
                toServer = []
                for datagram in toClient {
                    let output = try client.receive(datagram)
                    toServer += output.datagrams
                    if let keys = output.established { clientKeys = keys }
                }
            }
        }

        func handshake() throws(DTLSError) {
            try exchange(client.start())
        }
    }

    @Test func theHandshakeCompletesAndBothSidesDeriveTheSameSRTPKeys() throws {
        let pair = try Pair()
        try pair.handshake()
        #expect(pair.server.state == .connected && pair.client.state == .connected)
        let server = try #require(pair.serverKeys)
        let client = try #require(pair.clientKeys)
        // The server's preference wins: GCM (RFC 7714) before counter mode.
        #expect(server.profile == .aeadAes128Gcm)
        #expect(server == client)
        #expect(server.clientWriteKey.count == 16 && server.clientWriteSalt.count == 12)
        #expect(server.clientWriteKey != server.serverWriteKey && server.clientWriteSalt != server.serverWriteSalt)
        // What the client writes with is what the server reads with.
        #expect(client.masterKey(writtenBy: .client) == server.clientWriteKey + server.clientWriteSalt)
        // No flight outgrew the MTU, and no timer runs once the handshake is done.
        #expect(pair.sent.allSatisfy { $0.count <= DTLSEndpoint.defaultMTU })
        #expect(pair.server.retransmissionDeadline(now: 0) == nil)
        #expect(pair.server.applicationDataMTU > 1_100 && pair.server.applicationDataMTU < 1_200)
    }

    @Test func applicationDataFlowsBothWays() throws {
        let pair = try Pair()
        try pair.handshake()
        let toServer = try pair.client.write(Array("SCTP INIT".utf8))
        #expect(toServer.count == 1)
        let atServer = try pair.server.receive(toServer[0])
        #expect(atServer.applicationData == [Array("SCTP INIT".utf8)] && atServer.datagrams.isEmpty)

        let large = [UInt8](repeating: 0xA5, count: 1_100)
        let toClient = try pair.server.write(large) + pair.server.write(Array("ack".utf8))
        var received: [[UInt8]] = []
        for datagram in toClient { received += try pair.client.receive(datagram).applicationData }
        #expect(received == [large, Array("ack".utf8)])
    }

    /// OpenSSL's DTLS timers run on real time, so the first retransmission is 300 ms: a test
    /// process starved for 20 ms (the shortest OpenSSL allows) between two steps saw a timer
    /// fire that the test had not waited for, once in a run of four shards.
    static let retransmission = Duration.milliseconds(300)

    @Test func aLostFirstFlightIsSentAgainWhenItsTimerExpires() throws {
        let pair = try Pair(initialRetransmission: Self.retransmission)
        let lost = try pair.client.start()
        #expect(!lost.isEmpty)
        let deadline = try #require(pair.client.retransmissionDeadline(now: 1_000_000_000))
        #expect(deadline > 1_000_000_000 && deadline <= 1_300_000_000)
        // Not yet due: nothing to send.
        #expect(try pair.client.handleTimeout().isEmpty)
        usleep(330_000)
        let again = try pair.client.handleTimeout()
        #expect(again.count == lost.count)
        try pair.exchange(again)
        #expect(pair.server.state == .connected && pair.client.state == .connected)
        #expect(pair.serverKeys != nil && pair.serverKeys == pair.clientKeys)
    }

    /// The server's last flight is lost after it has finished: the client's retransmission must be
    /// answered by the connected server (whose record buffers were freed in between).
    @Test func aLostLastFlightIsSentAgainByTheConnectedServer() throws {
        let pair = try Pair(initialRetransmission: Self.retransmission)
        var toClient: [[UInt8]] = []
        for datagram in try pair.client.start() { toClient += try pair.server.receive(datagram).datagrams }
        var toServer: [[UInt8]] = []
        for datagram in toClient { toServer += try pair.client.receive(datagram).datagrams }
        var lost: [[UInt8]] = []
        for datagram in toServer {
            let output = try pair.server.receive(datagram)
            lost += output.datagrams
            if let keys = output.established { pair.serverKeys = keys }
        }
        #expect(pair.server.state == .connected && !lost.isEmpty)
        #expect(pair.client.state == .handshaking)
        usleep(330_000)
        try pair.exchange(pair.client.handleTimeout())
        #expect(pair.client.state == .connected && pair.clientKeys == pair.serverKeys)
        #expect(try pair.client.receive(pair.server.write(Array("late".utf8))[0]).applicationData == [Array("late".utf8)])
    }

    @Test func aServerWhosePeerShowsAnotherCertificateRefusesIt() throws {
        let stranger = try DTLSCertificate().fingerprint
        let pair = try Pair(serverExpects: stranger)
        do {
            try pair.handshake()
            Issue.record("the handshake was accepted")
        } catch {
            guard case .fingerprintMismatch(let expected, let actual) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(expected == stranger && actual != nil && actual != stranger)
        }
        #expect(pair.server.state == .failed && pair.serverKeys == nil)
        // The refusal still says goodbye, and nothing is read after it.
        #expect(!pair.server.close().isEmpty)
        #expect(pair.server.state == .failed)
        #expect(throws: DTLSError.notConnected) { try pair.server.write([1]) }
    }

    @Test func aClientWhosePeerShowsAnotherCertificateRefusesIt() throws {
        let pair = try Pair(clientExpects: DTLSCertificate().fingerprint)
        #expect {
            try pair.handshake()
        } throws: { error in
            if case DTLSError.fingerprintMismatch = error { return true }
            return false
        }
        #expect(pair.client.state == .failed && pair.clientKeys == nil)
    }

    @Test func closeNotifyEndsBothSides() throws {
        let pair = try Pair()
        try pair.handshake()
        let goodbye = pair.client.close()
        #expect(goodbye.count == 1 && pair.client.state == .closed)
        let output = try pair.server.receive(goodbye[0])
        #expect(output.peerClosed && output.datagrams.count == 1 && pair.server.state == .closed)
        #expect(pair.server.close().isEmpty)
        #expect(throws: DTLSError.notConnected) { try pair.server.write([1]) }
    }

    @Test func garbageIsDroppedOrRefusedWithATypedErrorNeverACrash() throws {
        var generator = SystemRandomNumberGenerator()
        // Before the handshake, to a fresh server each time (one refusal ends an endpoint).
        for length in [1, 12, 13, 25, 100, 1_200] {
            let pair = try Pair()
            var garbage = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // A handshake record's header, to get past the first check.
            if length >= 13 { garbage[0] = 22; garbage[1] = 0xFE; garbage[2] = 0xFD }
            do { _ = try pair.server.receive(garbage) } catch {}
        }
        // After it: a connected endpoint drops what does not authenticate, and carries on.
        let pair = try Pair()
        try pair.handshake()
        for length in [1, 13, 40, 1_200] {
            var garbage = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if length >= 13 { garbage[0] = 23; garbage[1] = 0xFE; garbage[2] = 0xFD }
            let output = try pair.server.receive(garbage)
            #expect(output.applicationData.isEmpty && output.datagrams.isEmpty)
        }
        // A flipped bit in a real record is dropped the same way.
        var record = try pair.client.write(Array("data".utf8))[0]
        record[record.count - 1] ^= 1
        #expect(try pair.server.receive(record).applicationData.isEmpty)
        #expect(pair.server.state == .connected)
        #expect(try pair.server.receive(pair.client.write(Array("more".utf8))[0]).applicationData == [Array("more".utf8)])

        #expect(throws: DTLSError.datagramTooLarge(DTLSEndpoint.maximumDatagramLength + 1)) {
            try pair.server.receive([UInt8](repeating: 23, count: DTLSEndpoint.maximumDatagramLength + 1))
        }
        #expect(throws: DTLSError.applicationDataTooLarge(16_385)) {
            try pair.server.write([UInt8](repeating: 0, count: 16_385))
        }
    }

    /// What one endpoint costs in OpenSSL's heap, printed for docs/benchmarks.md and bounded so a
    /// regression shows: made, handshaken, and after some application data.
    @Test func oneEndpointsMemoryIsBounded() throws {
        let pair = try Pair()
        let fresh = pair.server.heapBytes
        try pair.handshake()
        let connected = pair.server.heapBytes
        for _ in 0..<10 {
            _ = try pair.server.receive(pair.client.write([UInt8](repeating: 7, count: 1_000))[0])
        }
        let afterData = pair.server.heapBytes
        print("DTLS server endpoint heap: \(fresh) B made, \(connected) B connected, \(afterData) B after data")
        #expect(afterData < 48 * 1024)
    }
}

/// The fingerprint as SDP writes it (RFC 8122 section 5), and the records-to-datagrams packing.
@Suite struct DTLSFingerprintTests {
    @Test func aFingerprintRoundTripsThroughItsSDPForm() throws {
        let fingerprint = try DTLSCertificate().fingerprint
        let text = fingerprint.sdpValue
        #expect(text.count == 95 && text == text.uppercased())
        #expect(DTLSFingerprint(sdpValue: text) == fingerprint)
        #expect(DTLSFingerprint(sdpValue: text.lowercased()) == fingerprint)
        #expect(fingerprint.description == "sha-256 " + text)
    }

    @Test func malformedFingerprintsAreRefused() {
        let valid = Array(repeating: "AB", count: 32).joined(separator: ":")
        #expect(DTLSFingerprint(sdpValue: valid) != nil)
        let missingColon = "ABAB:" + Array(repeating: "AB", count: 30).joined(separator: ":")
        let notHex = "GB:" + Array(repeating: "AB", count: 31).joined(separator: ":")
        for bad in ["", "AB", valid + ":", valid + ":CD", String(valid.dropLast()), missingColon, ":" + valid, notHex,
                    Array(repeating: "AB", count: 31).joined(separator: ":"), "sha-256 " + valid] {
            #expect(DTLSFingerprint(sdpValue: bad) == nil, "\(bad)")
        }
    }

    @Test func recordsArePackedWholeIntoDatagramsNoLargerThanTheMTU() {
        func record(_ length: Int) -> [UInt8] { [22, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 8) + [UInt8(length >> 8), UInt8(length & 0xFF)] + [UInt8](repeating: 1, count: length) }
        let records = [record(487), record(487), record(287), record(1_187)]
        let bytes = records.flatMap { $0 }
        let datagrams = bytes.withUnsafeBytes { DTLSDatagrams.split($0, mtu: 1_200) }
        #expect(datagrams == [records[0] + records[1], records[2], records[3]])
        // A truncated tail is kept, not lost.
        let truncated = Array(bytes.prefix(510))
        #expect(truncated.withUnsafeBytes { DTLSDatagrams.split($0, mtu: 1_200) } == [truncated])
    }
}
