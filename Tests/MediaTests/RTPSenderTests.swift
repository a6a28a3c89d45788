import Testing
@testable import Media

/// Our outgoing stream's sequence numbers, timestamps, marker bits and sender-report figures.
@Suite struct RTPSenderTests {
    static let ms: UInt64 = 1_000_000

    @Test func eachPacketMovesTheSequenceByOneAndTheTimestampByItsSamplesAcrossTheirWraps() {
        var sender = RTPSender(ssrc: 9, payloadType: 111, clockRate: 48000, initialSequenceNumber: 65534, initialTimestamp: .max - 959)
        let first = sender.next(payloadSamples: 960, payloadBytes: 60, now: 0)
        let second = sender.next(payloadSamples: 960, payloadBytes: 70, now: 20 * Self.ms)
        let third = sender.next(payloadSamples: 960, payloadBytes: 80, now: 40 * Self.ms)
        #expect(first == RTPHeader(marker: true, payloadType: 111, sequenceNumber: 65534, timestamp: .max - 959, ssrc: 9))
        #expect(second == RTPHeader(marker: false, payloadType: 111, sequenceNumber: 65535, timestamp: 0, ssrc: 9))
        #expect(third.sequenceNumber == 0 && third.timestamp == 960 && !third.marker)
        #expect(sender.packetCount == 3 && sender.octetCount == 210)
    }

    @Test func silenceNotSentMovesOnlyTheTimestampAndMarksTheNextTalkSpurt() {
        var sender = RTPSender(ssrc: 9, payloadType: 0, clockRate: 8000, initialSequenceNumber: 10, initialTimestamp: 0)
        _ = sender.next(payloadSamples: 160, payloadBytes: 160, now: 0)
        sender.skip(samples: 160 * 50)
        let resumed = sender.next(payloadSamples: 160, payloadBytes: 160, now: 1_020 * Self.ms)
        #expect(resumed.marker && resumed.sequenceNumber == 11 && resumed.timestamp == 160 * 51)
        #expect(!sender.next(payloadSamples: 160, payloadBytes: 160, now: 1_040 * Self.ms).marker)
    }

    @Test func theSenderReportsRTPTimeIsTheLastPacketsMovedOnToNow() {
        var sender = RTPSender(ssrc: 9, payloadType: 111, clockRate: 48000, initialSequenceNumber: 0, initialTimestamp: 1000)
        let ntp = NTPTimestamp(seconds: 100, fraction: 0)
        #expect(sender.senderInfo(ntp: ntp, now: 0) == RTCPSenderInfo(ntp: ntp, rtpTimestamp: 1000, packetCount: 0, octetCount: 0))
        for i in 0..<5 { _ = sender.next(payloadSamples: 960, payloadBytes: 100, now: UInt64(i) * 20 * Self.ms) }
        // The fifth packet (timestamp 1000 + 4 * 960) went at 80 ms; 1.5 s later is 72000 ticks on.
        let info = sender.senderInfo(ntp: ntp, now: 1_580 * Self.ms)
        #expect(info.rtpTimestamp == 1000 + 4 * 960 + 72000)
        #expect(info.packetCount == 5 && info.octetCount == 500)
    }
}
