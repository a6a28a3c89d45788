import Glibc
import Loop
import Logging
import Media
import Server
import Session
import TLS

let webrtcLog = Logger(label: "parley.webrtc")

/// One WebRTC call on one loop: the shell that carries its transport's outputs (`WebRTCTransport`:
/// ICE-lite, DTLS, SRTP and the `oai-events` data channel, as a value that takes the time as an
/// input) out on the loop, with its Opus RTP both ways (`WebRTCMedia`) and the Realtime session
/// behind it (`WebRTCSession`).
///
/// Datagrams come from its loop's `MediaPort`; everything here runs on that loop, on one timer at
/// the transport's next deadline. The call ends once: hung up, its peer gone (ICE consent, RFC
/// 7675), its DTLS or SCTP failed, or its session closed; each way is counted.
final class WebRTCCall: MediaPortCall {
    let id: String
    let port: MediaPort
    var loop: EventLoop { port.loop }
    let metrics: WebRTCMetrics
    private(set) var transport: WebRTCTransport
    let ufrag: [UInt8]
    let session: any WebRTCCallSession
    var media: WebRTCMedia
    private var timer: ScheduledTask?
    private var timerAt: UInt64 = .max
    /// Told when the call ends, to forget it (`WebRTCCalls`).
    var onEnd: ((WebRTCCall) -> Void)?
    /// Its share of `parley_accounted_bytes`, under `webrtc`: the call's transport and media, and
    /// what its session last accounted.
    var memory: CallAccount

    var srtp: SRTPContext? { transport.srtp }
    var peer: TransportAddress? { transport.peer }
    var ended: Bool { transport.ended != nil }

    init(id: String, port: MediaPort, offer: WebRTCOffer, local: ICECredentials, ice settings: ICELiteAgent.Settings, dtls: DTLSEndpoint, session: any WebRTCCallSession,
         audioSSRC: UInt32, metrics: WebRTCMetrics, now: UInt64) {
        self.id = id
        self.port = port
        self.metrics = metrics
        self.session = session
        transport = WebRTCTransport(offer: offer, local: local, ice: settings, dtls: dtls, now: now)
        ufrag = Array(local.ufrag.utf8)
        media = WebRTCMedia(opusPayloadType: offer.opusPayloadType, ssrc: audioSSRC)
        memory = CallAccount(.webRTC, on: port.loop)
        rescheduleTimer(now: now)
        account()
    }

    /// Counts what the call holds anew (as it is made, as its media starts, and once a second of
    /// media); nothing once it has ended.
    func account() {
        guard !ended else { return memory.close() }
        memory.own(HeapSize.of(self) + HeapSize.of(ufrag) + transport.heapBytes + media.heapBytes)
    }

    /// The call's session reports what it holds (`SessionSocket.account`).
    func account(sessionBytes bytes: Int) { memory.session(bytes) }

    // MARK: In

    func received(_ datagram: UnsafeRawBufferPointer, kind: PacketKind, from: TransportAddress) {
        guard !ended else { return }
        let now = loop.nanoseconds()
        switch kind {
        case .stun: carry(transport.receive(stun: datagram, from: from, now: now), now: now)
        case .dtls: carry(transport.receive(dtls: datagram, from: from, now: now), now: now)
        // Media moves no deadline earlier: no rescheduling per packet (consent's moves later, and
        // the timer finds it so when it fires).
        case .rtp:
            if media.received(UnsafeMutableRawBufferPointer(mutating: datagram), now: now, call: self) { transport.heardMedia(from: from, now: now) }
            return
        case .drop: return metrics.dropped(.malformed)
        }
        rescheduleTimer(now: now)
    }

    /// A session event for the data channel.
    func send(text: String) {
        let now = loop.nanoseconds()
        carry(transport.send(text: text, now: now), now: now)
        rescheduleTimer(now: now)
    }

    // MARK: Out

    /// Carries the transport's outputs out: datagrams to the port, the route, the session's
    /// beginning and its client's events, the end.
    private func carry(_ outputs: [WebRTCTransport.Output], now: UInt64) {
        for output in outputs {
            switch output {
            case .transmit(let bytes, let to):
                bytes.withUnsafeBytes { port.send($0, to: to) }
            case .selected(let address, let replacing):
                port.route(address, to: self, replacing: replacing)
            case .refused(let refusal):
                metrics.iceRefused(refusal)
            case .mediaReady:
                media.start(now: now, call: self)
                account()
            case .eventsOpened:
                session.open(self)
            case .text(var event):
                guard !ended else { continue }
                event.withUTF8 { session.receive(text: UnsafeRawBufferPointer($0)) }
            case .ended(let reason, let detail):
                if let detail { callLog(detail) }
                ended(reason)
            }
        }
    }

    // MARK: Time

    /// One task at the transport's next deadline.
    func rescheduleTimer(now: UInt64) {
        let next = transport.deadline(now: now) ?? .max
        guard next != timerAt else { return }
        timer?.cancel()
        timerAt = next
        guard next != .max else { return timer = nil }
        timer = loop.schedule(after: Double(next > now ? next - now : 0) / 1e9) { [weak self] in self?.fire() }
    }

    private func fire() {
        timerAt = .max
        let now = loop.nanoseconds()
        carry(transport.handleTimeout(now: now), now: now)
        rescheduleTimer(now: now)
    }

    // MARK: Ending

    func portClosing() { end(.server) }

    /// Ends the call once (the transport's close_notify to the peer, then `ended`).
    func end(_ reason: WebRTCCallEnd) {
        carry(transport.end(reason), now: loop.nanoseconds())
    }

    /// The transport has ended: the media stops, the port forgets the call, the session ends.
    private func ended(_ reason: WebRTCCallEnd) {
        timer?.cancel()
        timer = nil
        timerAt = .max
        media.stop(call: self)
        memory.close()
        port.forget(self, ufrag: ufrag, address: peer)
        metrics.ended(reason)
        callLog("call ended: \(reason.rawValue)")
        session.ended(reason == .hangup ? .ended : .wentAway)
        onEnd?(self)
        onEnd = nil
    }

    func callLog(_ message: String) {
        webrtcLog.info("\(message)", metadata: ["call": "\(id)", "session": "\(session.sessionID)"])
    }
}
