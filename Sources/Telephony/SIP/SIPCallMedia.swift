import Codec
import Loop
import Media
import SIP
import Session
import TLS

/// What a SIP call's media hands its call: the caller's audio, a key pressed, the media gone quiet.
protocol SIPCallMediaOwner: AnyObject {
    /// One 20 ms frame of the caller's G.711, in playout order (silence for a frame that never came).
    func heard(_ frame: [UInt8])
    func pressed(_ key: Character)
    /// The reply's audio queued for the caller has all gone out.
    func sentAll()
    /// No RTP from the caller for `--sip-media-timeout` while the call was not on hold.
    func mediaTimedOut()
    /// This tick's reply frame is wanted: `queue` gets it, if one is ready.
    func pullReplyFrame()
}

/// A SIP call's RTP: its own UDP port (the answer's `m=` port), the caller's G.711 through the
/// jitter buffer to the session one 20 ms frame each tick of the loop's `PlayoutClock` (the clock
/// WebRTC's calls play on), RFC 4733 keys, and the reply's G.711 sent one packet a tick, silence
/// when there is none, to where the caller's packets come from (symmetric RTP, RFC 4961).
///
/// A port per call, as PBXs give: what arrives on it is this call's or a stranger's. The first
/// packet from the offer's address, or from the signalling's IP (a caller behind a NAT, whose offer
/// names its private address), fixes where the caller is; anything from elsewhere is a stranger's
/// and dropped (counted).
final class SIPCallMedia: DatagramSocket, PlayoutClient {
    let localPort: UInt16
    private(set) var codec: PhoneAudioOffer.Codec
    private(set) var peer: TransportAddress
    /// The caller's signalling address's IP: a NATed caller's RTP comes from it, not its offer's.
    private let signallingIP: TransportAddress.IP?
    private var latched: Bool
    /// The RTP both ways (`RTPStream`, WebRTC's too): the jitter buffer, the frame clock, the
    /// sender, keys in and out.
    private var stream: RTPStream
    private var outgoing = RTPOutgoingAudio()
    /// A reply frame went out on the last tick (`sentAll` is told when the queue runs dry).
    private var wasSending = false
    private var packet: [UInt8] = []
    private(set) var lastPacketAt: UInt64
    private let timeoutNanoseconds: UInt64
    /// The caller put the call on hold: no media is expected, and none sent.
    var onHold = false
    private(set) var ended = false
    private let playout: PlayoutClock
    private let metrics: SIPMetrics
    weak var call: SIPCallMediaOwner?
    /// Our SRTP key (SDES), on a call whose media is RTP/SAVP, and the context made with the far
    /// end's once its SDP gives it: every packet protected and checked (RFC 3711). With our key and
    /// no context (the far end's key not yet known, or libsrtp2 refused it), nothing is sent or taken.
    private let ourKey: SDESCrypto?
    private var theirKey: SDESCrypto?
    private var srtp: SRTPContext?

    static let frameBytes = 160

    /// Opens the call's port on `host`, the first free one of `ports` (nil: the kernel's choice).
    /// `crypto`: our SRTP key, for a call whose media is RTP/SAVP.
    init(loop: EventLoop, host: SocketAddress, ports: ClosedRange<Int>?, offer: PhoneAudioOffer, signalling: TransportAddress,
         playout: PlayoutClock, timeoutSeconds: Double, metrics: SIPMetrics, crypto: SDESCrypto? = nil) throws(SystemError) {
        // A random start within the range, so that calls spread over it (and a port just freed,
        // whose caller may still send to it, is not the next one given); 64 tries at most.
        let candidates: [Int] = ports.map { range in
            let start = Int(OpenSSL.randomBytes(2).reduce(0) { $0 << 8 | Int($1) }) % range.count
            return (0..<min(64, range.count)).map { range.lowerBound + (start + $0) % range.count }
        } ?? [0]
        let (fd, local) = try Sys.boundDatagramSocket(host: host, ports: candidates)
        localPort = UInt16(local.port)
        codec = offer.codec
        let offered = Self.address(offer.address, port: offer.port)
        peer = offered ?? signalling
        signallingIP = signalling.ip
        // Sent to the offer's address until the caller's first packet says where it really is:
        // from the offer's address, or from the signalling's IP (a NAT, or an offer naming an
        // address the caller does not send from).
        latched = false
        onHold = offer.isHold
        stream = RTPStream(payloadType: offer.codec.payloadType, jitter: .g711, eventPayloadType: offer.telephoneEvent, seed: OpenSSL.randomBytes(10))
        self.playout = playout
        self.metrics = metrics
        ourKey = crypto
        timeoutNanoseconds = UInt64(timeoutSeconds * 1e9)
        lastPacketAt = loop.nanoseconds()
        // Bounded per pass: a flood on one call's port cannot hold the loop.
        try super.init(loop: loop, fd: fd, perPass: 64)
        stream.start(at: playout.add(self))
        secure(with: offer.crypto)
    }

    /// What the call's media holds on the heap (`HeapSize`'s rules): this object, the jitter
    /// buffer, the reply waiting for its ticks, the packet being built, SRTP's contexts.
    var heapBytes: Int {
        HeapSize.of(self) + stream.heapBytes + outgoing.heapBytes + HeapSize.of(packet) + (srtp?.heapBytes ?? 0)
    }

    /// A call's media on `agent`'s loop and its settings' RTP ports: `offer` the far end's (or
    /// awaiting its answer), `crypto` our SRTP key on a call whose media is RTP/SAVP.
    convenience init(agent: SIPUserAgent, offer: PhoneAudioOffer, peer: SIPPeer, crypto: SDESCrypto?) throws(SystemError) {
        let settings = agent.settings
        try self.init(loop: agent.loop, host: settings.rtpBind, ports: settings.rtpPorts, offer: offer, signalling: peer.address,
                      playout: agent.playout, timeoutSeconds: settings.mediaTimeoutSeconds, metrics: agent.metrics, crypto: crypto)
    }

    /// Where the dialog says this media is: the contact over the peer's transport, our advertised
    /// address and this port, and our key.
    func local(agent: SIPUserAgent, peer: SIPPeer, crypto: SDESCrypto?) -> SIPDialog.Local {
        SIPDialog.Local(contact: agent.settings.contact(over: peer.transport), mediaHost: agent.settings.advertised, mediaPort: localPort, crypto: crypto)
    }

    /// The far end's key, from its offer or answer: the SRTP context made (again, if it changed).
    private func secure(with theirs: SDESCrypto?) {
        guard let ourKey, let theirs, theirs != theirKey else { return }
        theirKey = theirs
        do throws(SRTPError) {
            srtp = try SRTPContext(profile: .aes128CmHmacSha1_80, outboundMasterKey: ourKey.keyAndSalt, inboundMasterKey: theirs.keyAndSalt)
        } catch {
            srtp = nil
            sessionLog.error("SRTP for a SIP call could not be keyed; its media is dropped", metadata: ["error": "\(error)"])
        }
    }

    /// The call's media ends: its port closes.
    func close() {
        guard !ended else { return }
        ended = true
        playout.remove(self)
        closeSocket()
    }

    /// A re-INVITE moved the caller's media (or put it on hold, or took it off), or the ACK
    /// answered Parley's own offer (the codec may be the other law then). `answer`: the first
    /// address the far end gives, for a call Parley placed (its 183 or 2xx), taken wherever it is.
    func update(_ offer: PhoneAudioOffer, answer: Bool = false) {
        // A placed call's media starts with its answer: the ringing is not silence on the line.
        if answer { lastPacketAt = loop.nanoseconds() }
        onHold = offer.isHold
        stream.eventPayloadType = offer.telephoneEvent
        secure(with: offer.crypto)
        if offer.codec != codec {
            codec = offer.codec
            stream.change(payloadType: offer.codec.payloadType)
        }
        if let moved = Self.address(offer.address, port: offer.port), !offer.isHold, moved != peer, answer || !Self.isPrivate(moved) {
            // Sent there until its first packet comes, as at the start.
            peer = moved
            latched = false
        }
        lastPacketAt = loop.nanoseconds()
    }

    // MARK: In

    override func received(_ datagram: UnsafeRawBufferPointer, from sender: SocketAddress) {
        received(datagram, from: sender, now: loop.nanoseconds())
    }

    private func received(_ datagram: UnsafeRawBufferPointer, from: SocketAddress, now: UInt64) {
        guard let source = TransportAddress(from) else { return metrics.rtpDropped.add(1, .malformed) }
        if source != peer || !latched {
            guard !latched, source == peer || source.ip == signallingIP else { return metrics.rtpDropped.add(1, .stranger) }
            peer = source
            latched = true
        }
        // RTCP on the same port (rtcp-mux is not offered: a PBX sends it to port + 1, where
        // nothing listens) is not audio.
        guard !RTPPacket.isRTCP(datagram) else { return }
        var datagram = datagram
        if ourKey != nil {
            // Checked and decrypted in place, in the loop's receive buffer (RFC 3711 section 3.3).
            guard let srtp, let length = try? srtp.unprotect(rtp: UnsafeMutableRawBufferPointer(mutating: datagram)) else { return metrics.rtpDropped.add(1, .srtp) }
            datagram = UnsafeRawBufferPointer(rebasing: datagram[..<length])
        }
        guard let packet = try? RTPPacket(parsing: datagram) else { return }
        lastPacketAt = now
        switch stream.received(packet, in: datagram, audioPayloadType: codec.payloadType, now: now) {
        case .key(let key): call?.pressed(key)
        case .foreign: metrics.rtpDropped.add(1, .payloadType)
        case .audio, .nothing: break
        }
    }

    // MARK: The tick

    var playoutEnded: Bool { ended }

    /// Every frame due (`RTPStream.nextFrame`); the clock's `send` pass ran before with the same `now`,
    /// so one frame clock serves both ways.
    func play(dueBy now: UInt64, nextTick clockNext: UInt64) {
        while !ended, let output = stream.nextFrame(dueBy: now) {
            switch output {
            case .frame(let payload):
                call?.heard(payload)
            case .missing:
                // G.711 has no concealment of its own: the frame is silence, so the session's
                // clock and its detectors see no gap.
                call?.heard(Self.silence(codec))
            case .waiting:
                break
            }
        }
        stream.tickPlayed(now: now, clockNext: clockNext)
        if !onHold, now &- lastPacketAt > timeoutNanoseconds { call?.mediaTimedOut() }
    }

    // MARK: Out

    /// A packet for every frame due, the clock's `send` pass (before its slot's input, which moves
    /// `nextTick` on).
    func send(dueBy now: UInt64, nextTick clockNext: UInt64) {
        for _ in 0..<stream.framesDue(by: now) where !ended { send(now: now) }
    }

    /// The reply's G.711, queued to go one 20 ms packet a tick.
    func queue(_ bytes: [UInt8], responseID: String) { outgoing.append(bytes, responseID: responseID, frameBytes: Self.frameBytes) }

    /// What of `responseID` has gone out to the caller, in ms.
    func sentMs(of responseID: String) -> Int { outgoing.sentMs(of: responseID) }

    /// Drops the reply audio not yet sent (a barge-in): the caller hears it stop within a packet.
    func clearQueue() { outgoing.clear() }

    var isSending: Bool { !outgoing.isEmpty }

    /// One packet: the reply's next frame, or silence (a PBX may take a silent stream for a dead
    /// one, and a NAT's mapping needs the traffic). Nothing while the caller holds the call.
    private func send(now: UInt64) {
        guard !onHold else { return }
        let trailer = srtp?.rtpTrailerLength ?? 0
        // A key being pressed takes the tick (the reply's audio waits, it is not dropped).
        if stream.writeKey(now: now, into: &packet, trailer: trailer) { return transmit() }
        // One queue, the reply's (`SpeechOutput`): its next frame is pulled for this packet.
        if outgoing.isEmpty { call?.pullReplyFrame() }
        let reply = outgoing.next()
        // The reply's last frame went out on the last tick: the call may be waiting for it.
        if reply == nil, wasSending { call?.sentAll() }
        wasSending = reply != nil
        stream.write(reply ?? Self.silence(codec), now: now, into: &packet, trailer: trailer)
        transmit()
    }

    /// Presses `key` on the call (RFC 4733, in this stream); false when the far end's SDP had no
    /// telephone-event, `key` is not a DTMF key, or too many wait.
    func press(_ key: Character) -> Bool { stream.press(key) }

    /// The packet built, to the caller.
    private func transmit() {
        guard let destination = peer.socketAddress else { return }
        if ourKey != nil {
            guard let srtp, (try? srtp.protect(rtp: &packet)) != nil else { return }
        }
        let sent: Bool? = packet.withUnsafeBytes { bytes in
            do throws(SystemError) { return try send(bytes, to: destination) } catch { return nil }
        }
        switch sent {
        case true?: break
        case false?: metrics.rtpDropped.add(1, .sendBufferFull)
        case nil: metrics.rtpDropped.add(1, .sendFailed)
        }
    }

    /// A frame of silence: G.711's zero level, 0xFF in µ-law and 0xD5 in A-law.
    static func silence(_ codec: PhoneAudioOffer.Codec) -> [UInt8] {
        codec == .pcmu ? pcmuSilence : pcmaSilence
    }
    private static let pcmuSilence = [UInt8](repeating: 0xFF, count: frameBytes)
    private static let pcmaSilence = [UInt8](repeating: 0xD5, count: frameBytes)

    static func address(_ text: String, port: UInt16) -> TransportAddress? {
        guard port != 0, text != "0.0.0.0", let parsed = try? Sys.resolve(host: text, port: Int(port), passive: false, numericOnly: true).first else { return nil }
        return TransportAddress(parsed)
    }

    /// RFC 1918 and RFC 6598 addresses (and IPv6's unique local ones): an offer naming one comes
    /// from behind a NAT, whose packets arrive from another address.
    static func isPrivate(_ address: TransportAddress) -> Bool {
        switch address.ip {
        case .v4(let ip):
            let a = ip >> 24, b = ip >> 16 & 0xFF
            return a == 10 || (a == 172 && (16...31).contains(b)) || (a == 192 && b == 168) || (a == 100 && (64...127).contains(b))
        case .v6(let high, _):
            return high >> 57 == 0x7E  // fc00::/7
        }
    }
}

/// The reply's G.711 waiting for its ticks, in 20 ms frames, with how much of each reply has gone.
struct RTPOutgoingAudio {
    private var frames: [(responseID: String, bytes: [UInt8])] = []
    private var head = 0
    private var partial: [UInt8] = []
    private var sent: (responseID: String, frames: Int)?

    var isEmpty: Bool { head >= frames.count }

    mutating func append(_ bytes: [UInt8], responseID: String, frameBytes: Int) {
        partial += bytes
        while partial.count >= frameBytes {
            frames.append((responseID, Array(partial[..<frameBytes])))
            partial.removeFirst(frameBytes)
        }
    }

    mutating func next() -> [UInt8]? {
        guard head < frames.count else {
            frames.removeAll(keepingCapacity: true)
            head = 0
            return nil
        }
        let frame = frames[head]
        head += 1
        if sent?.responseID == frame.responseID { sent?.frames += 1 } else { sent = (frame.responseID, 1) }
        if head > 256 {
            frames.removeFirst(head)
            head = 0
        }
        return frame.bytes
    }

    func sentMs(of responseID: String) -> Int { sent?.responseID == responseID ? (sent?.frames ?? 0) * 20 : 0 }

    /// The queued frames' storage: the queue, and each frame's bytes, all of one size (the
    /// reply's id is shared); counted without walking the queue, which may hold a whole reply.
    var heapBytes: Int {
        HeapSize.of(frames) + (frames.count - head) * (frames.first.map { HeapSize.of($0.bytes) } ?? 0) + HeapSize.of(partial)
    }

    mutating func clear() {
        frames.removeAll(keepingCapacity: true)
        head = 0
        partial = []
    }
}
