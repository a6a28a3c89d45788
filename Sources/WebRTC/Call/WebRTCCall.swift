import Glibc
import Loop
import Logging
import Media
import Server
import Session
import TLS

let webrtcLog = Logger(label: "parley.webrtc")

/// One WebRTC call on one loop: the ICE-lite agent that answers the browser's checks, the DTLS
/// endpoint (Parley is its server, `a=setup:passive`), SRTP once DTLS has made its keys, the
/// `oai-events` data channel over SCTP, Opus RTP both ways, and the Realtime session behind it.
///
/// Datagrams come from its loop's `MediaPort`; everything here runs on that loop. The call ends
/// once (`end`): hung up, its peer gone (ICE consent, RFC 7675), its DTLS or SCTP failed, or its
/// session closed; each way is counted.
final class WebRTCCall: MediaPortCall {
    let id: String
    let port: MediaPort
    var loop: EventLoop { port.loop }
    let metrics: WebRTCMetrics
    private(set) var ice: ICELiteAgent
    let ufrag: [UInt8]
    let dtls: DTLSEndpoint
    var srtp: SRTPContext?
    var channels: DataChannels
    /// The `oai-events` channel's stream, once the browser opened it.
    var eventsStream: UInt16?
    let session: WebRTCSession
    /// Where ICE said the peer is: the only place media goes (RFC 8445 section 12).
    var peer: TransportAddress?
    var media: WebRTCMedia
    private var timer: ScheduledTask?
    private var timerAt: UInt64 = .max
    private(set) var ended = false
    /// Told when the call ends, to forget it (`WebRTCCalls`).
    var onEnd: ((WebRTCCall) -> Void)?

    init(id: String, port: MediaPort, offer: WebRTCOffer, local: ICECredentials, ice settings: ICELiteAgent.Settings, dtls: DTLSEndpoint, session: WebRTCSession,
         audioSSRC: UInt32, metrics: WebRTCMetrics, now: UInt64) {
        self.id = id
        self.port = port
        self.metrics = metrics
        self.dtls = dtls
        self.session = session
        ice = ICELiteAgent(local: local, remote: ICECredentials(ufrag: offer.iceUfrag, password: offer.icePwd), now: now, settings: settings)
        ufrag = Array(local.ufrag.utf8)
        var configuration = SCTPAssociation.Configuration()
        configuration.maxOutgoingMessageBytes = Int(min(offer.maxMessageSize, UInt64(configuration.maxOutgoingMessageBytes)))
        configuration.remotePort = offer.sctpPort
        // SCTP packets travel as DTLS application data: each must fit one record in one datagram.
        // The cipher is not chosen yet (DTLS_get_data_mtu is 0 until it is), and Parley's DTLS
        // offers AEAD suites only: 13 bytes of record header, 8 of explicit nonce and 16 of tag
        // (AES-GCM, the largest) under the 1,200-byte datagram leave 1,163.
        configuration.maxPacketBytes = min(configuration.maxPacketBytes, DTLSEndpoint.defaultMTU - 13 - 8 - 16)
        channels = DataChannels(association: SCTPAssociation(configuration: configuration), role: .server)
        media = WebRTCMedia(opusPayloadType: offer.opusPayloadType, ssrc: audioSSRC)
        rescheduleTimer(now: now)
    }

    // MARK: Datagrams in

    func received(_ datagram: UnsafeRawBufferPointer, kind: PacketKind, from: TransportAddress) {
        guard !ended else { return }
        let now = MonotonicClock.nanoseconds()
        switch kind {
        case .stun: receivedSTUN(datagram, from: from, now: now)
        case .dtls: receivedDTLS(datagram, from: from, now: now)
        // Media moves no deadline earlier: no rescheduling per packet (consent's moves later, and
        // the timer finds it so when it fires).
        case .rtp:
            if media.received(UnsafeMutableRawBufferPointer(mutating: datagram), now: now, call: self) { ice.authenticated(from: from, now: now) }
            return
        case .drop: return metrics.dropped(.malformed)
        }
        rescheduleTimer(now: now)
    }

    private func receivedSTUN(_ datagram: UnsafeRawBufferPointer, from: TransportAddress, now: UInt64) {
        for action in ice.receive(datagram, from: from, now: now) {
            switch action {
            case .send(let bytes, let to):
                bytes.withUnsafeBytes { port.send($0, to: to) }
            case .selected(let address):
                port.route(address, to: self, replacing: peer)
                peer = address
            case .refused(let refusal):
                metrics.iceRefused(refusal)
            case .expired:
                end(.peer_gone)
            }
        }
    }

    private func receivedDTLS(_ datagram: UnsafeRawBufferPointer, from: TransportAddress, now: UInt64) {
        let output: DTLSEndpoint.Output
        do throws(DTLSError) { output = try dtls.receive(datagram) } catch {
            callLog("DTLS failed: \(error)")
            return end(.dtls_failed)
        }
        sendDTLS(output.datagrams)
        if let keys = output.established {
            do throws(SRTPError) { srtp = try SRTPContext(keys: keys, role: .server) } catch {
                callLog("SRTP could not start: \(error)")
                return end(.dtls_failed)
            }
            media.start(now: now, call: self)
        }
        // Application data is only ever under the handshake's keys.
        if !output.applicationData.isEmpty { ice.authenticated(from: from, now: now) }
        for packet in output.applicationData { perform(channels.receive(packet, now: now), now: now) }
        if output.peerClosed { end(.hangup) }
    }

    func sendDTLS(_ datagrams: [[UInt8]]) {
        guard let peer else { return }
        for datagram in datagrams { datagram.withUnsafeBytes { port.send($0, to: peer) } }
    }

    // MARK: The data channel

    func perform(_ actions: [DataChannels.Action], now: UInt64) {
        for action in actions {
            guard !ended else { return }
            switch action {
            case .send(let packet):
                do throws(DTLSError) { sendDTLS(try dtls.write(packet)) } catch {
                    callLog("DTLS write failed: \(error)")
                    return end(.dtls_failed)
                }
            case .connected:
                break
            case .opened(let stream, let label, _):
                // The Realtime API's events travel on the channel the client opens as `oai-events`;
                // other channels are answered (DCEP) and ignored.
                guard label == "oai-events", eventsStream == nil else { continue }
                eventsStream = stream
                session.open(self)
            case .message(let stream, let message):
                guard stream == eventsStream, case .text(var event) = message else { continue }
                event.withUTF8 { session.receive(text: UnsafeRawBufferPointer($0)) }
            case .closed(let stream):
                if stream == eventsStream { end(.hangup) }
            case .ended:
                end(.data_channel_failed)
            }
        }
    }

    // MARK: Timers

    /// ICE's consent and set-up deadlines, DTLS's retransmission, SCTP's timers: one task at the
    /// earliest of them.
    func rescheduleTimer(now: UInt64) {
        guard !ended else { return }
        let next = min(ice.deadline ?? .max, dtls.retransmissionDeadline(now: now) ?? .max, channels.nextDeadline ?? .max)
        guard next != timerAt else { return }
        timer?.cancel()
        timerAt = next
        guard next != .max else { return timer = nil }
        timer = loop.schedule(after: Double(next > now ? next - now : 0) / 1e9) { [weak self] in self?.fire() }
    }

    private func fire() {
        timerAt = .max
        let now = MonotonicClock.nanoseconds()
        if ice.tick(now: now) == .expired { return end(.peer_gone) }
        if let deadline = dtls.retransmissionDeadline(now: now), deadline <= now {
            do throws(DTLSError) { sendDTLS(try dtls.handleTimeout()) } catch {
                callLog("DTLS gave up: \(error)")
                return end(.dtls_failed)
            }
        }
        if let deadline = channels.nextDeadline, deadline <= now { perform(channels.tick(now: now), now: now) }
        rescheduleTimer(now: now)
    }

    // MARK: Ending

    func portClosing() { end(.server) }

    /// Ends the call once: DTLS's close_notify to the peer, the session ended, the port forgets it.
    func end(_ reason: CallEnd) {
        guard !ended else { return }
        ended = true
        timer?.cancel()
        timer = nil
        media.stop(call: self)
        sendDTLS(dtls.close())
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
