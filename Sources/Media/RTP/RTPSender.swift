/// Our outgoing stream's RTP state (RFC 3550 section 5.1): its SSRC and payload type, the next
/// sequence number and timestamp, the counts a sender report carries, and the NTP/RTP timestamp
/// pair that ties the stream's clock to the wall clock in that report (section 6.4.1).
///
/// The initial sequence number and timestamp are the caller's random numbers (section 5.1: they
/// SHOULD be random, to make known-plaintext attacks on encryption harder); this value has no
/// generator of its own.
package struct RTPSender: Sendable, Equatable {
    package let ssrc: UInt32
    package private(set) var payloadType: UInt8
    package let clockRate: Int
    /// The next packet's sequence number and timestamp.
    package private(set) var sequenceNumber: UInt16
    package private(set) var timestamp: UInt32
    /// Packets and payload octets sent so far; both wrap (section 6.4.1).
    package private(set) var packetCount: UInt32 = 0
    package private(set) var octetCount: UInt32 = 0
    /// Whether the next packet starts a talk spurt: the stream's first, and the first after
    /// silence that was not sent (RFC 3551 section 4.1; RFC 7587 section 4.1 for Opus's DTX).
    private var startsTalkSpurt = true
    /// The last packet's timestamp and when it was sent, to place `now` on the RTP clock.
    private var lastTimestamp: UInt32
    private var lastSentAt: UInt64?

    package init(ssrc: UInt32, payloadType: UInt8, clockRate: Int, initialSequenceNumber: UInt16, initialTimestamp: UInt32) {
        precondition(payloadType <= 127 && clockRate > 0, "payload type \(payloadType), clock rate \(clockRate)")
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.clockRate = clockRate
        sequenceNumber = initialSequenceNumber
        timestamp = initialTimestamp
        lastTimestamp = initialTimestamp
    }

    /// The header for the packet sent at `now` (a monotonic clock in nanoseconds) carrying
    /// `payloadSamples` samples of audio in `payloadBytes` octets; the sequence number then moves
    /// on by one and the timestamp by the samples.
    package mutating func next(payloadSamples: Int, payloadBytes: Int, now: UInt64) -> RTPHeader {
        let header = RTPHeader(
            marker: startsTalkSpurt, payloadType: payloadType, sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: ssrc)
        startsTalkSpurt = false
        lastTimestamp = timestamp
        lastSentAt = now
        sequenceNumber &+= 1
        timestamp &+= UInt32(truncatingIfNeeded: payloadSamples)
        packetCount &+= 1
        octetCount &+= UInt32(truncatingIfNeeded: payloadBytes)
        return header
    }

    /// The stream's codec changed (a re-INVITE, an answer naming the other law): its numbers go
    /// on (RFC 3550 section 5.1 ties them to the source, not the payload type).
    package mutating func change(payloadType: UInt8) { self.payloadType = payloadType }

    /// Silence of `samples` samples that is not sent (DTX): the timestamp moves on, the sequence
    /// number does not (section 5.1: it counts packets), and the next packet is marked.
    package mutating func skip(samples: Int) {
        timestamp &+= UInt32(truncatingIfNeeded: samples)
        startsTalkSpurt = true
    }

    /// The sender information for an SR made at `now` (monotonic nanoseconds, the clock `next`
    /// is given) whose wall-clock time is `ntp`: the RTP timestamp is the last packet's, moved on
    /// by the time since it was sent, so it names the same instant as `ntp` (section 6.4.1),
    /// not the last packet's.
    package func senderInfo(ntp: NTPTimestamp, now: UInt64) -> RTCPSenderInfo {
        var rtpTimestamp = timestamp
        if let lastSentAt, now >= lastSentAt {
            rtpTimestamp = lastTimestamp &+ RTPReceiveStatistics.timestampUnits(now - lastSentAt, clockRate: clockRate)
        }
        return RTCPSenderInfo(ntp: ntp, rtpTimestamp: rtpTimestamp, packetCount: packetCount, octetCount: octetCount)
    }
}
