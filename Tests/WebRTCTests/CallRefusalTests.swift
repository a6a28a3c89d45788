import Glibc
import Loop
import Media
import Models
import Server
import Session
import TLS
import Testing
import TestSupport
@testable import WebRTC

/// A call's bad input on real sockets: a `TestServer` with `/v1/realtime/calls`, an offer posted
/// over HTTP, and Parley's own STUN, DTLS and SRTP in their client roles on a loopback UDP socket.
/// Each refusal is dropped or answered, counted, and costs the server nothing else.
@Suite(.serialized) struct CallRefusalTests {
    /// A server whose calls give up on a silent peer after `timeout` seconds.
    static func server(timeout: Double = 15) throws -> TestServer {
        try TestServer(routes: { routes in
            let sessions = RealtimeEndpoint(model: BuiltinModel(), modelName: "test")
            sessions.install(on: &routes)
            var settings = WebRTCEndpoint.Settings()
            settings.host = "127.0.0.1"
            settings.setupTimeoutSeconds = timeout
            settings.consentTimeoutSeconds = timeout
            WebRTCEndpoint(sessions: sessions, settings: settings, metrics: WebRTCMetrics()).install(on: &routes)
        })
    }

    /// The caller's side: its certificate, credentials, UDP socket, and what the answer said.
    final class Caller {
        let certificate: DTLSCertificate
        let ufrag = "callr"
        let password = "callerPassword24charsXYZ"
        let fd: Int32
        var port = 0
        var serverUfrag = ""
        var serverPassword = ""
        var serverFingerprint: DTLSFingerprint?
        var callID = ""

        init() throws {
            certificate = try DTLSCertificate()
            fd = try Sys.datagramSocket(family: AF_INET)
            try Sys.bindDatagram(fd, to: .ipv4(127, 0, 0, 1, port: 0))
        }

        deinit { Sys.close(fd) }

        /// An offer as a browser's: Opus, the data channel, BUNDLE, `fingerprint` (its own unless told).
        func offer(fingerprint: DTLSFingerprint? = nil) -> String {
            let shown = (fingerprint ?? certificate.fingerprint).sdpValue
            let transport = "a=ice-ufrag:\(ufrag)\r\na=ice-pwd:\(password)\r\na=fingerprint:sha-256 \(shown)\r\na=setup:actpass\r\n"
            return "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1\r\n"
                + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=sendrecv\r\na=rtcp-mux\r\na=rtpmap:111 opus/48000/2\r\n" + transport
                + "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=sctp-port:5000\r\n" + transport
        }

        /// Posts the offer; reads the answer's port, credentials and fingerprint.
        func call(_ server: TestServer, fingerprint: DTLSFingerprint? = nil, path: String = "/v1/realtime/calls") throws {
            let body = offer(fingerprint: fingerprint)
            let client = try server.client()
            try client.send("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/sdp\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            let response = try client.readResponse()
            try #require(response.status == 201, "\(response)")
            let answer = try SessionDescription(parsing: response.body)
            let audio = try #require(answer.media.first)
            port = Int(audio.port)
            serverUfrag = try #require(answer.iceUfrag(of: audio))
            serverPassword = try #require(answer.icePwd(of: audio))
            serverFingerprint = DTLSFingerprint(bytes: try #require(answer.fingerprints(of: audio).first).bytes)
            callID = String(try #require(response.headers["location"] ?? response.headers["Location"]).split(separator: "/").last ?? "")
        }

        /// A Binding request as the controlling browser sends it, nominating, signed with `key`.
        func check(key: String? = nil) -> [UInt8] {
            let id = STUNTransactionID(high: UInt32.random(in: 0...UInt32.max), low: UInt64.random(in: 0...UInt64.max))
            let message = STUNMessage(method: STUNMessage.binding, messageClass: .request, transactionID: id, attributes: [
                .username(Array("\(serverUfrag):\(ufrag)".utf8)), .priority(2_130_706_431), .iceControlling(tieBreaker: 7), .useCandidate,
            ])
            return message.signed(integrityKey: Array((key ?? serverPassword).utf8))
        }

        func send(_ bytes: [UInt8]) throws {
            _ = try bytes.withUnsafeBytes { try Sys.sendDatagram(fd, $0, to: .ipv4(127, 0, 0, 1, port: UInt16(port))) }
        }

        /// The next datagram from the server, or nil within `seconds`.
        func receive(within seconds: Double = 3) throws -> [UInt8]? {
            var buffer = [UInt8](repeating: 0, count: 2_048)
            var sender = SocketAddress()
            let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
            while MonotonicClock.nanoseconds() < deadline {
                let count = try buffer.withUnsafeMutableBytes { try Sys.receiveDatagram(fd, into: $0, from: &sender) }
                if let count { return Array(buffer[..<count]) }
                usleep(2_000)
            }
            return nil
        }

        /// ICE, then the DTLS handshake as its client: the SRTP keys, or the error DTLS ended with.
        func connect() throws -> SRTPKeyingMaterial? {
            try send(check())
            let response = try #require(try receive(), "no answer to a valid check")
            #expect(try STUNMessage(parsing: response).messageClass == .successResponse)
            let fingerprint = try #require(serverFingerprint)
            let dtls = try DTLSEndpoint(context: DTLSContext(certificate: certificate, role: .client), remoteFingerprint: fingerprint)
            for datagram in try dtls.start() { try send(datagram) }
            while let datagram = try receive() {
                guard PacketKind.classify(datagram[0]) == .dtls else { continue }
                let output = try dtls.receive(datagram)
                for reply in output.datagrams { try send(reply) }
                if let keys = output.established { return keys }
            }
            return nil
        }
    }

    @Test func aCheckWithTheWrongPasswordIsAnswered401AndCounted() throws {
        let server = try Self.server()
        let caller = try Caller()
        try caller.call(server)
        try caller.send(caller.check(key: "not-the-password-at-all!"))
        let response = try STUNMessage(parsing: try #require(try caller.receive()))
        #expect(response.messageClass == .errorResponse && response.errorCode?.code == 401)
        #expect(server.metric(#"parley_webrtc_ice_refusals_total{reason="unauthorized"}"#) == 1)
        // The call goes on: the right password is answered.
        try caller.send(caller.check())
        #expect(try STUNMessage(parsing: try #require(try caller.receive())).messageClass == .successResponse)
    }

    @Test func garbageIsDroppedAndCountedAndTheCallGoesOn() throws {
        let server = try Self.server()
        let caller = try Caller()
        try caller.call(server)
        var random = SeededRandom(seed: 38)
        for first in [UInt8(200), 70, 4, 19] {
            try caller.send([first] + random.bytes(40))  // none of STUN, DTLS or RTP (RFC 7983)
        }
        try caller.send([22] + random.bytes(60))  // DTLS from an address ICE never chose
        try caller.send([0x80] + random.bytes(60))  // RTP from it
        #expect(server.metric(#"parley_webrtc_datagrams_dropped_total{reason="malformed"}"#, becomes: 4))
        #expect(server.metric(#"parley_webrtc_datagrams_dropped_total{reason="unknown_peer"}"#, becomes: 2))
        let keys = try caller.connect()
        #expect(keys != nil, "the call could not be made after the garbage")
    }

    @Test func aDTLSPeerWhoseCertificateIsNotTheOffersEndsTheCall() throws {
        let server = try Self.server()
        let caller = try Caller()
        let other = try DTLSCertificate()
        try caller.call(server, fingerprint: other.fingerprint)
        _ = try? caller.connect()
        #expect(server.metric(#"parley_webrtc_calls_ended_total{reason="dtls_failed"}"#, becomes: 1))
        #expect(server.metric("parley_webrtc_calls_open", becomes: 0))
    }

    @Test func aReplayedSRTPPacketIsDroppedAndCounted() throws {
        let server = try Self.server()
        let caller = try Caller()
        try caller.call(server)
        let keys = try #require(try caller.connect())
        let srtp = try SRTPContext(keys: keys, role: .client)
        var packet: [UInt8] = []
        RTPHeader(payloadType: 111, sequenceNumber: 1, timestamp: 960, ssrc: 0x5EED).write(payload: [0xF8, 0xFF, 0xFE], into: &packet)
        try srtp.protect(rtp: &packet)
        try caller.send(packet)
        try caller.send(packet)
        #expect(server.metric(#"parley_webrtc_datagrams_dropped_total{reason="srtp_replay"}"#, becomes: 1))
        // A new packet (libsrtp checks the replay window before the tag) with one bit of its tag flipped.
        var forged: [UInt8] = []
        RTPHeader(payloadType: 111, sequenceNumber: 2, timestamp: 1_920, ssrc: 0x5EED).write(payload: [0xF8, 0xFF, 0xFE], into: &forged)
        try srtp.protect(rtp: &forged)
        forged[forged.count - 1] ^= 1
        try caller.send(forged)
        #expect(server.metric(#"parley_webrtc_datagrams_dropped_total{reason="srtp_authentication"}"#, becomes: 1))
    }

    @Test func aPeerThatNeverChecksIsEndedWithinItsTimeout() throws {
        let server = try Self.server(timeout: 1)
        let caller = try Caller()
        try caller.call(server)
        #expect(server.metric("parley_webrtc_calls_open") == 1)
        // One second to nominate; polled for five.
        #expect(server.metric(#"parley_webrtc_calls_ended_total{reason="peer_gone"}"#, becomes: 1))
        #expect(server.metric("parley_webrtc_calls_open", becomes: 0))
    }

    @Test func aHangupEndsTheCallAndAnUnknownCallIs404() throws {
        let server = try Self.server()
        let caller = try Caller()
        try caller.call(server)
        let client = try server.client()
        try client.send("POST /v1/realtime/calls/\(caller.callID)/hangup HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(server.metric(#"parley_webrtc_calls_ended_total{reason="hangup"}"#, becomes: 1))
        try client.send("POST /v1/realtime/calls/rtc_nosuchcall/hangup HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        #expect(try client.readResponse().status == 404)
    }

    /// The Realtime API's older signalling posts the offer to the session's own path; the same
    /// path still upgrades to a WebSocket session.
    @Test func theOlderFlowPostsTheOfferToTheSessionsPathWhichStillUpgrades() throws {
        let server = try Self.server()
        let caller = try Caller()
        try caller.call(server, path: "/v1/realtime?model=gpt-realtime")
        #expect(try caller.connect() != nil)
        let client = try server.client()
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
    }
}
