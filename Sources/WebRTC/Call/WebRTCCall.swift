import Glibc
import Loop
import Logging
import Media
import Server
import Session
import SessionEngine
import TLS

let webrtcLog = Logger(label: "parley.webrtc")

/// One WebRTC call on one loop: the shell that carries its transport's outputs (`WebRTCTransport`:
/// ICE-lite, DTLS, SRTP and the `oai-events` data channel, as a value that takes the time as an
/// input) out on the loop, with its Opus RTP both ways (`WebRTCMedia`); the conversation of
/// whichever API the offer asked for (`CallConversation`: the Realtime API's on
/// `/v1/realtime/calls`, GPT-Live's on `/v1/live/sessions`) speaks over it, which it never asks
/// about: it is that conversation's socket and media leg (WebRTCCall+Leg.swift).
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
    /// The API's side of the call, from the offer's admission to the call's end.
    private(set) var conversation: (any CallConversation)?
    /// Whether the data channel has opened the conversation: until then nothing reaches it.
    private(set) var conversing = false
    /// The call as sidebands and call control reach it by its id.
    let line: CallLine
    private(set) var sessionID = ""
    var media: WebRTCMedia
    private var timer: ScheduledTask?
    private var timerAt: UInt64 = .max
    /// Its share of `parley_accounted_bytes`, under `webrtc`: the call's transport and media, and
    /// what its session last accounted.
    var memory: CallAccount

    var srtp: SRTPContext? { transport.srtp }
    var peer: TransportAddress? { transport.peer }
    var ended: Bool { transport.ended != nil }

    /// `converse` makes the call's conversation, the call its leg.
    init(id: String, port: MediaPort, offer: WebRTCOffer, local: ICECredentials, ice settings: ICELiteAgent.Settings, dtls: DTLSEndpoint,
         audioSSRC: UInt32, metrics: WebRTCMetrics, now: UInt64, converse: (_ id: String, _ leg: WebRTCCall) -> any CallConversation) {
        self.id = id
        self.port = port
        self.metrics = metrics
        transport = WebRTCTransport(offer: offer, local: local, ice: settings, dtls: dtls, now: now)
        ufrag = Array(local.ufrag.utf8)
        media = WebRTCMedia(opusPayloadType: offer.opusPayloadType, ssrc: audioSSRC)
        memory = CallAccount(.webRTC, on: port.loop)
        line = CallLine(id: id, on: port.loop)
        line.carrier = self
        let made = converse(id, self)
        conversation = made
        sessionID = made.sessionID
        rescheduleTimer(now: now)
        account()
    }

    /// Counts what the call holds anew (as it is made, as its media starts, and once a second of
    /// media); nothing once it has ended.
    func account() {
        guard !ended else { return memory.close() }
        memory.own(HeapSize.of(self) + HeapSize.of(ufrag) + transport.heapBytes + media.heapBytes + line.heapBytes)
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
        guard !ended else { return }
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
                guard !conversing, let conversation else { continue }
                conversing = true
                line.converse(conversation)
                line.moved(to: .answered)
                conversation.open(self)
            case .text(var event):
                guard !ended, conversing, let conversation else { continue }
                event.withUTF8 { conversation.receive(clientText: UnsafeRawBufferPointer($0)) }
            case .ended(let reason, let detail):
                if let detail { callLog(detail) }
                ended(reason)
            }
        }
    }

    /// One frame of the caller's audio (`convert` decodes it from the jitter buffer's packet, or
    /// conceals the one lost), to the conversation once the data channel has opened it.
    func heard(_ convert: (AudioInput) throws -> [Int16]) {
        guard conversing, let conversation else { return }
        conversation.hear(convert)
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

    func portClosing(_ reason: WebRTCCallEnd) { end(reason) }

    /// Ends the call once (the transport's close_notify to the peer, then `ended`).
    func end(_ reason: WebRTCCallEnd) {
        carry(transport.end(reason), now: loop.nanoseconds())
    }

    /// The transport has ended: the media stops, the port forgets the call, the conversation ends
    /// (and lets go of the call, its socket).
    private func ended(_ reason: WebRTCCallEnd) {
        timer?.cancel()
        timer = nil
        timerAt = .max
        media.stop(call: self)
        memory.close()
        port.forget(self, ufrag: ufrag, address: peer)
        metrics.ended(reason)
        callLog("call ended: \(reason.rawValue)")
        line.end(reason: reason.rawValue)
        if conversing { conversation?.close(reason == .hangup ? .ended : .wentAway, reason: nil) }
        conversation = nil
    }

    func callLog(_ message: String) {
        webrtcLog.info("\(message)", metadata: ["call": "\(id)", "session": "\(sessionID)"])
    }
}
