import TLS
import Glibc
import Loop
import Media
import Testing
import TestSupport
@testable import WebRTC

/// What keeps a call alive, on real sockets (`CallRefusalTests`' server and caller): a peer that
/// nominates once and then, as libnice does (GStreamer's webrtcbin), keeps the path with Binding
/// indications and its media, never another check. Its SRTP is authenticated, so the call stays;
/// indications alone carry no integrity, so once the media stops the call ends `peer_gone`.
@Suite(.serialized) struct CallLivenessTests {
    static let indication = STUNMessage(method: STUNMessage.binding, messageClass: .indication,
                                        transactionID: STUNTransactionID(high: 7, low: 7)).signed(integrityKey: nil)

    @Test func mediaAndIndicationsWithoutChecksKeepTheCallAndIndicationsAloneDoNot() throws {
        // Consent lasts 2 s here; the caller keeps it for 6 s, 3 times that, with packets 100 ms
        // apart: a margin of 20 packets, whatever the machine's load.
        let server = try CallRefusalTests.server(timeout: 2)
        let caller = try CallRefusalTests.Caller()
        try caller.call(server)
        let srtp = try SRTPContext(keys: try #require(try caller.connect()), role: .client)
        var sequence: UInt16 = 1
        let kept = MonotonicClock.nanoseconds() + 6_000_000_000
        while MonotonicClock.nanoseconds() < kept {
            var packet: [UInt8] = []
            RTPHeader(payloadType: 111, sequenceNumber: sequence, timestamp: UInt32(sequence) * 960, ssrc: 0x11CE)
                .write(payload: [0xF8, 0xFF, 0xFE], into: &packet)
            try srtp.protect(rtp: &packet)
            try caller.send(packet)
            if sequence % 5 == 0 { try caller.send(Self.indication) }
            sequence &+= 1
            usleep(100_000)
        }
        #expect(server.metric(#"parley_webrtc_calls_ended_total{reason="peer_gone"}"#) == 0)
        #expect(server.metric("parley_webrtc_calls_open") == 1)
        // Indications only from here: the call ends within its 2 s (polled for five), as one
        // whose peer sent nothing at all would.
        for _ in 0..<12 {
            try caller.send(Self.indication)
            usleep(500_000)
            if server.metric(#"parley_webrtc_calls_ended_total{reason="peer_gone"}"#) == 1 { break }
        }
        #expect(server.metric(#"parley_webrtc_calls_ended_total{reason="peer_gone"}"#, becomes: 1))
        #expect(server.metric("parley_webrtc_calls_open", becomes: 0))
    }
}
