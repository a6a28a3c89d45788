import Media
import Testing
import TLS
@testable import WebRTC

/// A call's transport as a value, on a clock the test drives (no socket, no loop): its set-up and
/// consent deadlines, catching up after a stall, ending once, and a real DTLS handshake with a
/// client endpoint in memory that makes the SRTP keys and opens nothing else.
struct WebRTCTransportTests {
    static let second: UInt64 = 1_000_000_000
    let local = ICECredentials(ufrag: "ours1234", password: "our+password/of/24chars0")
    let browser = TransportAddress.ipv4(192, 0, 2, 10, port: 50_000)
    let elsewhere = TransportAddress.ipv4(198, 51, 100, 7, port: 61_000)

    /// A transport for Chrome's offer, made at `now`, with the default timeouts (set-up 15 s,
    /// consent 30 s); `client`: the certificate the DTLS peer will show (the offer's otherwise).
    func transport(now: UInt64 = 0, client: DTLSCertificate? = nil) throws -> (WebRTCTransport, WebRTCOffer, server: DTLSFingerprint) {
        let offer = try WebRTCOffer(SessionDescription(parsing: OfferFixtures.chrome))
        let server = try DTLSCertificate()
        let fingerprint = try #require(client.map(\.fingerprint) ?? DTLSFingerprint(bytes: offer.fingerprint.bytes))
        let dtls = try DTLSEndpoint(context: DTLSContext(certificate: server, role: .server), remoteFingerprint: fingerprint)
        return (WebRTCTransport(offer: offer, local: local, ice: ICELiteAgent.Settings(), dtls: dtls, now: now), offer, server.fingerprint)
    }

    /// A nominating check as the browser sends it, signed with our password.
    func check(_ offer: WebRTCOffer, id: UInt32 = 1) -> [UInt8] {
        STUNMessage(method: STUNMessage.binding, messageClass: .request, transactionID: STUNTransactionID(high: id, low: 7), attributes: [
            .username(Array("\(local.ufrag):\(offer.iceUfrag)".utf8)), .priority(0x6E00_01FF), .iceControlling(tieBreaker: 42), .useCandidate,
        ]).signed(integrityKey: Array(local.password.utf8))
    }

    func ends(_ outputs: [WebRTCTransport.Output]) -> [WebRTCCallEnd] {
        outputs.compactMap { if case .ended(let reason, _) = $0 { reason } else { nil } }
    }

    @Test func aPeerThatNeverNominatesIsGoneAtTheSetUpDeadlineAndOnlyOnce() throws {
        var (transport, _, _) = try transport(now: 5 * Self.second)
        let deadline = try #require(transport.deadline(now: 5 * Self.second))
        #expect(deadline == 20 * Self.second)
        #expect(transport.handleTimeout(now: deadline - 1).isEmpty)
        #expect(ends(transport.handleTimeout(now: deadline)) == [.peer_gone])
        #expect(transport.handleTimeout(now: deadline + Self.second).isEmpty)
        #expect(transport.deadline(now: deadline) == nil)
        #expect(transport.end(.server).isEmpty, "a second end is not an end")
    }

    @Test func aNominationIsAnsweredAndRoutedAndAuthenticatedMediaKeepsTheCall() throws {
        var (transport, offer, _) = try transport()
        let answered = check(offer).withUnsafeBytes { transport.receive(stun: $0, from: browser, now: Self.second) }
        #expect(answered.contains { if case .transmit(_, let to) = $0 { to == browser } else { false } })
        #expect(answered.contains(.selected(browser, replacing: nil)))
        #expect(transport.peer == browser)
        // Media every second for two minutes keeps the peer there; the timer finds consent moved on.
        var now = Self.second
        while now < 120 * Self.second {
            now += Self.second
            transport.heardMedia(from: browser, now: now)
            if let deadline = transport.deadline(now: now), deadline <= now { #expect(ends(transport.handleTimeout(now: now)).isEmpty) }
        }
        // Media from another address is not the peer's: it keeps nothing.
        for _ in 0..<40 {
            now += Self.second
            transport.heardMedia(from: elsewhere, now: now)
            if let deadline = transport.deadline(now: now), deadline <= now {
                let outputs = transport.handleTimeout(now: now)
                if !outputs.isEmpty { #expect(ends(outputs) == [.peer_gone]); break }
            }
        }
        #expect(transport.ended == .peer_gone)
        #expect(now == 150 * Self.second, "consent lasts 30 s from the last authenticated packet, at 120 s")
    }

    @Test func aStalledLoopCatchesUpWithOneEndNotABurst() throws {
        var (transport, offer, _) = try transport()
        _ = check(offer).withUnsafeBytes { transport.receive(stun: $0, from: browser, now: 0) }
        // The loop comes back ten minutes later: every deadline since has passed, once.
        let outputs = transport.handleTimeout(now: 600 * Self.second)
        #expect(ends(outputs) == [.peer_gone])
        #expect(outputs.filter { if case .transmit = $0 { true } else { false } }.count <= 1, "\(outputs)")
        #expect(transport.handleTimeout(now: 601 * Self.second).isEmpty)
    }

    @Test func theDTLSHandshakeMakesTheKeysAndAWrongCertificateEndsTheCall() throws {
        let client = try DTLSCertificate()
        var (transport, offer, fingerprint) = try transport(client: client)
        _ = check(offer).withUnsafeBytes { transport.receive(stun: $0, from: browser, now: 0) }
        let peer = try DTLSEndpoint(context: DTLSContext(certificate: client, role: .client), remoteFingerprint: fingerprint)
        var toServer = try peer.start()
        var ready = false
        for _ in 0..<10 where !ready && !toServer.isEmpty {
            var toClient: [[UInt8]] = []
            for datagram in toServer {
                for output in datagram.withUnsafeBytes({ transport.receive(dtls: $0, from: browser, now: Self.second) }) {
                    if case .transmit(let bytes, _) = output { toClient.append(bytes) }
                    if output == .mediaReady { ready = true }
                }
            }
            toServer = []
            for datagram in toClient { toServer += try peer.receive(datagram).datagrams }
        }
        #expect(ready, "the handshake did not make the SRTP keys")
        #expect(transport.srtp != nil && transport.ended == nil)

        // Another call whose DTLS peer shows a certificate the offer did not name.
        var (other, otherOffer, otherFingerprint) = try self.transport(client: try DTLSCertificate())
        _ = check(otherOffer).withUnsafeBytes { other.receive(stun: $0, from: browser, now: 0) }
        let stranger = try DTLSEndpoint(context: DTLSContext(certificate: client, role: .client), remoteFingerprint: otherFingerprint)
        var pending = try stranger.start()
        var ended: [WebRTCCallEnd] = []
        for _ in 0..<10 where ended.isEmpty && !pending.isEmpty {
            var back: [[UInt8]] = []
            for datagram in pending {
                let outputs = datagram.withUnsafeBytes { other.receive(dtls: $0, from: browser, now: Self.second) }
                ended += ends(outputs)
                for case .transmit(let bytes, _) in outputs { back.append(bytes) }
            }
            pending = []
            for datagram in back { pending += (try? stranger.receive(datagram).datagrams) ?? [] }
        }
        #expect(ended == [.dtls_failed])
    }
}
