import Glibc
import Loop
import Media
import TLS

/// A call's audio: the caller's Opus RTP through SRTP and the jitter buffer to the conversation, one
/// 20 ms frame each playout tick; the session's Opus packets to the caller as SRTP; and RTCP both
/// ways (RFC 3550 section 6: receiver and sender reports every 5 s, the minimum interval, which at
/// one stream each way is far under the 5 % of bandwidth the RFC allows).
final class WebRTCMedia {
    let opusPayloadType: UInt8
    /// The RTP both ways (`RTPStream`, SIP's too): the jitter buffer, the frame clock, the sender.
    private var stream: RTPStream
    private var statistics = RTPReceiveStatistics(clockRate: 48_000)
    private var reports: ScheduledTask?
    private var outgoing: [UInt8] = []
    var sentPackets: Int { stream.sentPackets }
    var heapBytes: Int { stream.heapBytes + HeapSize.of(outgoing) }
    static let reportSeconds = 5.0

    /// `ssrc`: the one the answer's SDP names.
    init(opusPayloadType: UInt8, ssrc: UInt32) {
        self.opusPayloadType = opusPayloadType
        // RFC 3550 section 5.1: random initial sequence number and timestamp.
        let ssrcBytes = (0..<4).map { UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * $0)) }
        stream = RTPStream(payloadType: opusPayloadType, jitter: .opus, seed: ssrcBytes + OpenSSL.randomBytes(6))
    }

    /// SRTP is keyed: the call joins its loop's playout clock, and the reports start.
    func start(now: UInt64, call: WebRTCCall) {
        stream.start(at: call.port.playout.add(call))
        reports = call.loop.schedule(after: Self.reportSeconds) { [weak self, weak call] in
            guard let self, let call else { return }
            self.report(call: call)
        }
    }

    func stop(call: WebRTCCall) {
        call.port.playout.remove(call)
        reports?.cancel()
        reports = nil
    }

    // MARK: In

    /// An RTP or RTCP datagram (RFC 5761 section 4 tells them apart under rtcp-mux), decrypted in
    /// place in the loop's read buffer. True when it passed SRTP's authentication (whatever it
    /// then held): the peer is there (`ICELiteAgent.authenticated`).
    @discardableResult
    func received(_ datagram: UnsafeMutableRawBufferPointer, now: UInt64, call: WebRTCCall) -> Bool {
        guard let srtp = call.srtp else {
            call.metrics.dropped(.unknownPeer)
            return false
        }
        if RTPPacket.isRTCP(UnsafeRawBufferPointer(datagram)) {
            let length: Int
            do throws(SRTPError) { length = try srtp.unprotectRTCP(datagram) } catch { return dropped(error, call) }
            guard let packets = try? RTCPPacket.parseCompound(UnsafeRawBufferPointer(rebasing: datagram[..<length])) else {
                call.metrics.dropped(.undecodable)
                return true
            }
            for case .senderReport(let report) in packets { statistics.senderReportReceived(report.info, now: now) }
            return true
        }
        let length: Int
        do throws(SRTPError) { length = try srtp.unprotect(rtp: datagram) } catch { return dropped(error, call) }
        let bytes = UnsafeRawBufferPointer(rebasing: datagram[..<length])
        guard let packet = try? RTPPacket(parsing: bytes) else {
            call.metrics.dropped(.undecodable)
            return true
        }
        // Only the offer's Opus: telephone-event and anything else the browser may send are not audio.
        if stream.received(packet, in: bytes, audioPayloadType: opusPayloadType, now: now) == .audio { _ = statistics.record(packet.header, now: now) }
        return true
    }

    /// Counted; false: nothing authenticated (a replay's tag is valid, but anyone could resend it).
    private func dropped(_ error: SRTPError, _ call: WebRTCCall) -> Bool {
        switch error {
        case .replay: call.metrics.dropped(.srtp_replay)
        case .authentication: call.metrics.dropped(.srtp_authentication)
        default: call.metrics.dropped(.undecodable)
        }
        return false
    }

    /// Every frame due by `now`, in order (the loop's `PlayoutClock` calls this each 20 ms): a
    /// loop that was late catches up rather than drifting (`RTPStream.nextFrame`).
    func play(dueBy now: UInt64, nextTick clockNext: UInt64, call: WebRTCCall) {
        while !call.ended, let output = stream.nextFrame(dueBy: now) {
            switch output {
            case .frame(let payload):
                call.metrics.audioFrames.add(1, .played)
                payload.withUnsafeBytes { packet in call.heard { try $0.opus(packet) } }
            case .missing(let next):
                if let next {
                    call.metrics.audioFrames.add(1, .recovered)
                    next.withUnsafeBytes { packet in call.heard { try $0.opusLost(next: packet) } }
                } else {
                    call.metrics.audioFrames.add(1, .concealed)
                    call.heard { try $0.opusLost(next: nil) }
                }
            case .waiting:
                break
            }
        }
        stream.tickPlayed(now: now, clockNext: clockNext)
    }

    // MARK: Out

    /// One 20 ms Opus packet of the session's reply, as SRTP to the peer ICE selected.
    func send(opus packet: [UInt8], call: WebRTCCall) {
        guard let srtp = call.srtp, let peer = call.peer else { return }
        stream.write(packet, now: call.loop.nanoseconds(), into: &outgoing, trailer: srtp.rtpTrailerLength)
        do throws(SRTPError) { try srtp.protect(rtp: &outgoing) } catch { return }
        outgoing.withUnsafeBytes { call.port.send($0, to: peer) }
    }

    /// A sender report (we speak) or a receiver report, with our CNAME (RFC 3550 section 6.1: a
    /// compound packet starts with SR or RR and carries SDES CNAME).
    private func report(call: WebRTCCall) {
        guard !call.ended, let srtp = call.srtp, let peer = call.peer else { return }
        let now = call.loop.nanoseconds()
        let blocks = statistics.reportBlock(now: now).map { [$0] } ?? []
        let first: RTCPPacket = sentPackets > 0
            ? .senderReport(RTCPSenderReport(ssrc: stream.sender.ssrc, info: stream.sender.senderInfo(ntp: NTPTimestamp(unixNanoseconds: WallClock.nanoseconds()), now: now), reports: blocks))
            : .receiverReport(RTCPReceiverReport(ssrc: stream.sender.ssrc, reports: blocks))
        var bytes: [UInt8] = []
        RTCPPacket.writeCompound([first, .sourceDescription([RTCPSourceDescription(ssrc: stream.sender.ssrc, cname: Array(call.id.utf8))])],
                                 into: &bytes, trailerCapacity: srtp.rtcpTrailerLength)
        if (try? srtp.protectRTCP(&bytes)) != nil { bytes.withUnsafeBytes { call.port.send($0, to: peer) } }
        reports = call.loop.schedule(after: Self.reportSeconds) { [weak self, weak call] in
            guard let self, let call else { return }
            self.report(call: call)
        }
    }
}
