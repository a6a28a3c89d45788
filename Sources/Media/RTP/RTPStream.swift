/// One call's RTP audio both ways, as a value: what WebRTC's calls and SIP's share (issue 71). In:
/// the caller's packets into the jitter buffer, RFC 4733's keys told apart from the audio; each
/// tick of the loop's `PlayoutClock`, every frame due played in order, catching up at most ten
/// after a late tick and starting again on the clock's next run after a stall. Out: the sender
/// (seeded once, RFC 3550 section 5.1: a codec change keeps its numbers), the keys Parley presses
/// sent in place of audio a packet at a time (RFC 4733 section 2.5), and what was sent.
///
/// It has no socket, clock or crypto: the call's shell gives it the time and a parsed packet, and
/// protects and sends what it writes. Its carriers differ only in what a frame is: Opus at 48 kHz
/// (WebRTC, whose lost packets are recovered from the next one's FEC or concealed) or G.711 at
/// 8 kHz (SIP, whose missing frames are silence).
package struct RTPStream: Sendable {
    package private(set) var sender: RTPSender
    private var jitter: JitterBuffer
    private var keysIn = TelephoneEvents()
    private var keysOut = TelephoneEventSender()
    /// The far end's RFC 4733 payload type, if its SDP offered telephone-events.
    package var eventPayloadType: UInt8?
    /// When the next 20 ms frame is due, to the nanosecond, so the ticks do not drift by the
    /// loop's lateness: the caller's frame to the session, and the call's packet to the caller.
    private var nextFrameAt: UInt64 = 0
    private var playedThisTick = 0
    package private(set) var sentPackets = 0
    package let frameSamples: Int
    package static let frameNanoseconds: UInt64 = 20_000_000
    /// The most frames one tick plays or sends: a loop late by more starts again on its clock.
    static let catchUpFrames = 10

    /// `seed`: ten random bytes (the SSRC, then the first sequence number and timestamp).
    package init(payloadType: UInt8, jitter settings: JitterBuffer.Settings, eventPayloadType: UInt8? = nil, seed: [UInt8]) {
        precondition(seed.count >= 10, "an RTP stream is seeded with 10 random bytes")
        sender = RTPSender(ssrc: seed[0..<4].reduce(0) { $0 << 8 | UInt32($1) }, payloadType: payloadType, clockRate: settings.clockRate,
                           initialSequenceNumber: UInt16(seed[4]) << 8 | UInt16(seed[5]), initialTimestamp: seed[6..<10].reduce(0) { $0 << 8 | UInt32($1) })
        jitter = JitterBuffer(settings: settings)
        frameSamples = settings.samplesPerFrame
        self.eventPayloadType = eventPayloadType
    }

    /// What it holds on the heap: the jitter buffer's ring.
    package var heapBytes: Int { jitter.heapBytes }

    /// The stream plays from `first`, the clock's first run of its slot.
    package mutating func start(at first: UInt64) { nextFrameAt = first }

    /// The far end changed codec (a re-INVITE, an answer): the sequence and timestamp go on.
    package mutating func change(payloadType: UInt8) { sender.change(payloadType: payloadType) }

    // MARK: In

    /// What a packet of the call's was.
    package enum Heard: Equatable {
        /// Audio, queued in the jitter buffer.
        case audio
        /// A key's event ended: the key, once (RFC 4733 section 2.5.1.4's retransmissions are not).
        case key(Character)
        /// Nothing to play: an empty packet, a key still held, a key's retransmission.
        case nothing
        /// Another payload type than the call's audio and keys.
        case foreign
    }

    /// `packet`, parsed from `datagram` (decrypted), received at `now`.
    package mutating func received(_ packet: RTPPacket, in datagram: UnsafeRawBufferPointer, audioPayloadType: UInt8, now: UInt64) -> Heard {
        let type = packet.header.payloadType
        if type == audioPayloadType {
            guard !packet.payload.isEmpty else { return .nothing }
            jitter.insert(payload: Array(datagram[packet.payload]), sequenceNumber: packet.header.sequenceNumber, timestamp: packet.header.timestamp, now: now)
            return .audio
        }
        if let eventPayloadType, type == eventPayloadType {
            let key = keysIn.received(payload: UnsafeRawBufferPointer(rebasing: datagram[packet.payload]), timestamp: packet.header.timestamp)
            return key.map(Heard.key) ?? .nothing
        }
        return .foreign
    }

    // MARK: The tick

    /// The frames due by `now`: at most `catchUpFrames`.
    package func framesDue(by now: UInt64) -> Int {
        now < nextFrameAt ? 0 : Int(min(UInt64(Self.catchUpFrames), (now - nextFrameAt) / Self.frameNanoseconds + 1))
    }

    /// The next frame due by `now`, in order (a frame's payload, a hole with the next packet if it
    /// is here, or nothing to play), or nil once none is (at most `catchUpFrames` a tick). A pull,
    /// not a callback: what the frame sets off (a reply, a key pressed) may come back to the stream.
    package mutating func nextFrame(dueBy now: UInt64) -> JitterBuffer.Output? {
        guard nextFrameAt <= now, playedThisTick < Self.catchUpFrames else { return nil }
        playedThisTick += 1
        let output = jitter.pop(now: nextFrameAt)
        nextFrameAt += Self.frameNanoseconds
        return output
    }

    /// The tick's frames are played: a stream still behind (a stalled loop) starts again at
    /// `clockNext`, its slot's next run, rather than play a burst.
    package mutating func tickPlayed(now: UInt64, clockNext: UInt64) {
        playedThisTick = 0
        if nextFrameAt <= now { nextFrameAt = clockNext }
    }

    // MARK: Out

    /// Presses `key` (RFC 4733): false when the far end takes no telephone-events, `key` is not
    /// a DTMF key, or too many wait.
    package mutating func press(_ key: Character) -> Bool {
        guard eventPayloadType != nil else { return false }
        return keysOut.press(key)
    }

    /// While a key is being pressed, its next event packet sent at `now`, written into `packet`
    /// with room for `trailer` bytes (SRTP's tag): it takes the tick, and the audio waits (it is
    /// not dropped). False when no key is being pressed.
    package mutating func writeKey(now: UInt64, into packet: inout [UInt8], trailer: Int) -> Bool {
        guard let eventType = eventPayloadType, !keysOut.isIdle, let event = keysOut.next(timestamp: sender.timestamp) else { return false }
        var header = sender.next(payloadSamples: frameSamples, payloadBytes: event.payload.count, now: now)
        header.payloadType = eventType
        header.timestamp = event.timestamp
        header.marker = event.marker
        header.write(payload: event.payload, into: &packet, trailerCapacity: trailer)
        sentPackets += 1
        return true
    }

    /// The packet of one frame of audio, `payload`, sent at `now`, written into `packet` with room
    /// for `trailer` bytes.
    package mutating func write(_ payload: [UInt8], now: UInt64, into packet: inout [UInt8], trailer: Int) {
        let header = sender.next(payloadSamples: frameSamples, payloadBytes: payload.count, now: now)
        header.write(payload: payload, into: &packet, trailerCapacity: trailer)
        sentPackets += 1
    }
}
