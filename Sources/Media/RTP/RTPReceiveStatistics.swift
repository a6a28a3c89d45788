/// What a receiver counts of one remote source, for the report block our RR or SR sends back
/// (RFC 3550 section 6.4.1): appendix A.1's sequence tracking (extension across 65535 -> 0,
/// probation of a new source, resynchronisation after a restart), A.3's loss figures and A.8's
/// interarrival jitter. Times are passed in: `now` is a monotonic clock in nanoseconds.
package struct RTPReceiveStatistics: Sendable, Equatable {
    /// A.1's constants: packets in sequence before a source is valid, and how far a sequence
    /// number may jump ahead (a dropout) or behind (misordering) and still belong to the run.
    static let minSequential = 2
    static let maxDropout: UInt16 = 3000
    static let maxMisorder: UInt16 = 100
    static let sequenceModulus: UInt32 = 1 << 16

    package let clockRate: Int
    /// The source counted; a packet from another SSRC starts the count over (section 8.2).
    package private(set) var ssrc: UInt32?

    private var maxSequence: UInt16 = 0
    /// Sequence-number wraps, times 65536 (A.1's `cycles`).
    private var cycles: UInt32 = 0
    private var baseSequence: UInt32 = 0
    private var badSequence: UInt32 = 0
    private var probation = 0
    /// Packets accepted (past probation, not far out of sequence).
    package private(set) var received: UInt32 = 0
    private var expectedPrior: UInt32 = 0
    private var receivedPrior: UInt32 = 0

    /// The last packet's transit time (arrival minus timestamp, in timestamp units), wrapping.
    private var transit: UInt32?
    /// A.8's estimate times 16, so the 1/16 gain is exact in integers.
    private var jitterTimes16: UInt32 = 0

    private var lastSenderReport: UInt32 = 0
    private var lastSenderReportArrival: UInt64?

    package init(clockRate: Int) {
        precondition(clockRate > 0, "clock rate \(clockRate)")
        self.clockRate = clockRate
    }

    /// Counts one RTP packet arriving at `now`; false while the source is on probation or when the
    /// packet is far out of sequence (A.1's `update_seq` returning 0).
    @discardableResult
    package mutating func record(_ header: RTPHeader, now: UInt64) -> Bool {
        if header.ssrc != ssrc {
            self = RTPReceiveStatistics(clockRate: clockRate)
            ssrc = header.ssrc
            // A.1: a new source starts on probation, its "previous" packet just behind this one.
            maxSequence = header.sequenceNumber &- 1
            probation = Self.minSequential
        }
        guard updateSequence(header.sequenceNumber) else { return false }
        updateJitter(timestamp: header.timestamp, now: now)
        return true
    }

    /// A.1's `update_seq`.
    private mutating func updateSequence(_ sequence: UInt16) -> Bool {
        let delta = sequence &- maxSequence
        if probation > 0 {
            if sequence == maxSequence &+ 1 {
                probation -= 1
                maxSequence = sequence
                if probation == 0 {
                    start(at: sequence)
                    received &+= 1
                    return true
                }
            } else {
                probation = Self.minSequential - 1
                maxSequence = sequence
            }
            return false
        } else if delta < Self.maxDropout {
            // In order, with a permissible gap; a smaller number than the highest is a wrap.
            if sequence < maxSequence { cycles &+= Self.sequenceModulus }
            maxSequence = sequence
        } else if UInt32(delta) <= Self.sequenceModulus - UInt32(Self.maxMisorder) {
            // A very large jump: the source restarted, if the next packet follows this one.
            if UInt32(sequence) == badSequence {
                start(at: sequence)
            } else {
                badSequence = (UInt32(sequence) + 1) & (Self.sequenceModulus - 1)
                return false
            }
        }
        // Otherwise a duplicate or a packet misordered by at most `maxMisorder`: counted, the
        // highest number kept.
        received &+= 1
        return true
    }

    /// A.1's `init_seq`.
    private mutating func start(at sequence: UInt16) {
        baseSequence = UInt32(sequence)
        maxSequence = sequence
        badSequence = Self.sequenceModulus + 1
        cycles = 0
        received = 0
        receivedPrior = 0
        expectedPrior = 0
    }

    /// A.8: the difference of successive transit times, smoothed with gain 1/16. Arrival is turned
    /// into timestamp units; both wrap, and only their differences are used.
    private mutating func updateJitter(timestamp: UInt32, now: UInt64) {
        let arrival = Self.timestampUnits(now, clockRate: clockRate)
        let newTransit = arrival &- timestamp
        defer { transit = newTransit }
        guard let transit else { return }
        let d = Int32(bitPattern: newTransit &- transit).magnitude
        // J += (|D| - J) / 16, with J kept times 16: J16 += |D| - J16 / 16 (rounded).
        jitterTimes16 = jitterTimes16 &+ d &- ((jitterTimes16 &+ 8) >> 4)
    }

    /// A monotonic time in nanoseconds as a (wrapping) count of `clockRate` ticks.
    static func timestampUnits(_ nanoseconds: UInt64, clockRate: Int) -> UInt32 {
        let (seconds, part) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        let rate = UInt64(clockRate)
        return UInt32(truncatingIfNeeded: seconds &* rate &+ part * rate / 1_000_000_000)
    }

    /// The highest sequence number received, with the wraps above it (A.3's `extended_max`).
    package var extendedHighestSequence: UInt32 { cycles &+ UInt32(maxSequence) }

    /// Packets expected since the source became valid (A.3).
    package var expected: Int64 {
        guard ssrc != nil, probation == 0 else { return 0 }
        return Int64(extendedHighestSequence) - Int64(baseSequence) + 1
    }

    /// Packets lost since then: negative when duplicates outnumber the lost (A.3).
    package var cumulativeLost: Int64 { expected - Int64(received) }

    /// The interarrival jitter in timestamp units (A.8).
    package var jitter: UInt32 { jitterTimes16 >> 4 }

    /// Notes a sender report from this source arriving at `now`, for the LSR and DLSR of the
    /// next report block.
    package mutating func senderReportReceived(_ info: RTCPSenderInfo, now: UInt64) {
        lastSenderReport = info.ntp.middle32
        lastSenderReportArrival = now
    }

    /// The report block for this source at `now`, nil before it is valid. The fraction lost is
    /// over the interval since the last block made (A.3), so making one starts a new interval.
    package mutating func reportBlock(now: UInt64) -> RTCPReportBlock? {
        guard let ssrc, probation == 0 else { return nil }
        let expected = expected
        let expectedInterval = expected - Int64(expectedPrior)
        expectedPrior = UInt32(truncatingIfNeeded: expected)
        let receivedInterval = Int64(received) - Int64(receivedPrior)
        receivedPrior = received
        let lostInterval = expectedInterval - receivedInterval
        let fraction: UInt8 =
            expectedInterval <= 0 || lostInterval <= 0 ? 0 : UInt8(truncatingIfNeeded: min(255, (lostInterval << 8) / expectedInterval))
        let lost = Int32(clamping: cumulativeLost)
        var block = RTCPReportBlock(
            ssrc: ssrc, fractionLost: fraction,
            cumulativeLost: min(max(lost, RTCPReportBlock.cumulativeLostRange.lowerBound), RTCPReportBlock.cumulativeLostRange.upperBound),
            extendedHighestSequence: extendedHighestSequence, jitter: jitter)
        if let arrival = lastSenderReportArrival {
            block.lastSenderReport = lastSenderReport
            // 1/65536 s units; a clock that went backwards gives 0.
            let elapsed = now >= arrival ? now - arrival : 0
            let (seconds, part) = elapsed.quotientAndRemainder(dividingBy: 1_000_000_000)
            let units = seconds.multipliedReportingOverflow(by: 65536)
            block.delaySinceLastSenderReport =
                units.overflow ? .max : UInt32(clamping: units.partialValue + part * 65536 / 1_000_000_000)
        }
        return block
    }
}
