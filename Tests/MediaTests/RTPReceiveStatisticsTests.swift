import Testing
@testable import Media

/// RFC 3550 appendix A's receiver counting: A.1's sequence extension and probation, A.3's loss
/// figures, A.8's jitter, and section 6.4.1's LSR and DLSR.
@Suite struct RTPReceiveStatisticsTests {
    static let ms: UInt64 = 1_000_000

    static func header(_ sequence: UInt16, _ timestamp: UInt32 = 0, ssrc: UInt32 = 1) -> RTPHeader {
        RTPHeader(payloadType: 111, sequenceNumber: sequence, timestamp: timestamp, ssrc: ssrc)
    }

    @Test func aNewSourceIsOnProbationUntilTwoPacketsInSequence() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        let refused = stats.record(Self.header(100), now: 0)
        #expect(!refused)
        let none = stats.reportBlock(now: 0)
        #expect(none == nil)
        let valid = stats.record(Self.header(101), now: 20 * Self.ms)
        #expect(valid && stats.received == 1 && stats.expected == 1)
        let block = stats.reportBlock(now: 20 * Self.ms)
        #expect(block?.extendedHighestSequence == 101)
    }

    @Test func aPacketOutOfSequenceRestartsProbation() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        stats.record(Self.header(100), now: 0)
        let refused = stats.record(Self.header(300), now: 0)
        #expect(!refused)
        let taken = stats.record(Self.header(301), now: 0)
        #expect(taken)
        #expect(stats.expected == 1)
    }

    @Test func sequenceNumbersWrappingPast65535CountACycle() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        for sequence: UInt16 in [65533, 65534, 65535, 0, 1] { stats.record(Self.header(sequence), now: 0) }
        #expect(stats.extendedHighestSequence == 65536 + 1)
        // Counted from the second packet (the first was on probation): 65534...65537.
        #expect(stats.expected == 4 && stats.received == 4 && stats.cumulativeLost == 0)
        // A packet from before the wrap, late: counted, the highest unchanged.
        stats.record(Self.header(65535), now: 0)
        #expect(stats.extendedHighestSequence == 65537 && stats.cumulativeLost == -1)
    }

    @Test func lossGivesCumulativeLostAndTheFractionOfEachInterval() throws {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        // 0...100, every tenth from 10 on lost: 10 lost of 100 expected (1...100, 0 was probation).
        for sequence: UInt16 in 0...100 where sequence % 10 != 0 || sequence == 0 { stats.record(Self.header(sequence), now: 0) }
        stats.record(Self.header(101), now: 0)
        let firstBlock = stats.reportBlock(now: 0)
        let first = try #require(firstBlock)
        #expect(first.cumulativeLost == 10)
        #expect(first.extendedHighestSequence == 101)
        // A.3: 10 lost of 101 expected in the interval, in 256ths: 2560 / 101 = 25.
        #expect(first.fractionLost == 25)
        // The next interval: 102...201 with every even one lost, 50 of 100.
        for sequence: UInt16 in 102...201 where sequence % 2 == 1 { stats.record(Self.header(sequence), now: 0) }
        let secondBlock = stats.reportBlock(now: 0)
        let second = try #require(secondBlock)
        #expect(second.fractionLost == 128)
        #expect(second.cumulativeLost == 60)
        // Nothing new: nothing lost in the interval.
        let third = stats.reportBlock(now: 0)
        #expect(third?.fractionLost == 0)
    }

    @Test func aJumpOfMoreThanTheDropoutIsTakenOnlyWhenTheNextPacketFollowsIt() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        for sequence: UInt16 in 0...10 { stats.record(Self.header(sequence), now: 0) }
        // A.1: one packet 20000 ahead is taken for a stray; two in a row for a restarted sender.
        let refused = stats.record(Self.header(20000), now: 0)
        #expect(!refused)
        #expect(stats.extendedHighestSequence == 10)
        let taken = stats.record(Self.header(20001), now: 0)
        #expect(taken)
        #expect(stats.extendedHighestSequence == 20001 && stats.expected == 1 && stats.received == 1)
    }

    @Test func aNewSSRCStartsTheCountOver() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        for sequence: UInt16 in 0...10 { stats.record(Self.header(sequence), now: 0) }
        let refused = stats.record(Self.header(500, ssrc: 2), now: 0)
        #expect(!refused)
        #expect(stats.ssrc == 2 && stats.expected == 0)
        let taken = stats.record(Self.header(501, ssrc: 2), now: 0)
        #expect(taken)
        let block = stats.reportBlock(now: 0)
        #expect(block?.ssrc == 2)
    }

    @Test func jitterOfAConstantDelayIsZeroAndOfAnAlternatingOneConvergesToIt() {
        // 20 ms packets at 48 kHz, their timestamps wrapping past 2^32 on the way.
        var steady = RTPReceiveStatistics(clockRate: 48000)
        var alternating = RTPReceiveStatistics(clockRate: 48000)
        let start: UInt32 = .max - 960 * 100
        for i in 0..<400 {
            let timestamp = start &+ UInt32(960 * i)
            let sent = UInt64(i) * 20 * Self.ms
            steady.record(Self.header(UInt16(i), timestamp), now: 5_000 * Self.ms + sent)
            // Every other packet 10 ms later: each transit differs from the last by 480 units.
            alternating.record(Self.header(UInt16(i), timestamp), now: 5_000 * Self.ms + sent + (i % 2 == 0 ? 0 : 10 * Self.ms))
        }
        #expect(steady.jitter == 0)
        #expect((470...480).contains(alternating.jitter))
    }

    @Test func jitterFollowsA8sOneSixteenthGain() {
        var stats = RTPReceiveStatistics(clockRate: 8000)
        stats.record(Self.header(0, 0), now: 0)
        stats.record(Self.header(1, 160), now: 20 * Self.ms)
        // The third packet 16 ms late (128 units at 8 kHz): J = 0 + (128 - 0) / 16 = 8.
        stats.record(Self.header(2, 320), now: 56 * Self.ms)
        #expect(stats.jitter == 8)
        // Back on time: D = 128 again, J = 8 + (128 - 8) / 16 = 15.5.
        stats.record(Self.header(3, 480), now: 60 * Self.ms)
        #expect(stats.jitter == 15)
    }

    @Test func lsrIsTheLastSenderReportsMiddleBitsAndDLSRTheTimeSinceIn65536ths() throws {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        stats.record(Self.header(0), now: 0)
        stats.record(Self.header(1), now: 0)
        let before = stats.reportBlock(now: 0)
        #expect(before?.lastSenderReport == 0)
        let ntp = NTPTimestamp(seconds: 0xB705, fraction: 0x2000_0000)
        stats.senderReportReceived(RTCPSenderInfo(ntp: ntp, rtpTimestamp: 0, packetCount: 2, octetCount: 20), now: 1_000 * Self.ms)
        let made = stats.reportBlock(now: 2_500 * Self.ms)
        let block = try #require(made)
        #expect(block.lastSenderReport == 0xB705_2000)
        #expect(block.delaySinceLastSenderReport == 98304)  // 1.5 s
    }
}
