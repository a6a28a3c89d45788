import Access
import Codec
import JSON
import Logging
import Loop
import Media
import Server
import Session
import SIP
import TLS

/// One SIP call (RFC 3261's dialog, section 12, as the UAS): its INVITE answered with G.711 and
/// telephone-event, its 2xx retransmitted until the ACK (section 13.3.1.4), re-INVITEs and UPDATEs
/// answered (hold, a carrier's session refresh), INFO keys, BYE either way; and its session, the
/// same engine and driver as `/twilio`'s calls, fed 20 ms of G.711 each playout tick
/// (`SIPCallMedia`), its replies sent back as RTP.
///
/// The call is the session's socket and wire: events go to the sideband WebSockets attached with
/// `?call_id=` (none until one attaches), audio to the caller's RTP.
final class SIPCall: SIPMediaCall, DirectedCall {
    /// The id call control names it by (`rtc_…`, as OpenAI's `call_id`).
    let id: String
    let callID: String
    unowned let agent: SIPUserAgent
    let invite: SIPMessage
    private let inviteKey: SIPTransactionKey
    let peer: SIPPeer
    let localTag = SIPUserAgent.tag()
    private let remoteTag: String?
    private let remoteURI: String
    private let localURI: String
    private var remoteTarget: String
    private var routeSet: [String]
    private var localCSeq: UInt32 = 1
    private var remoteCSeq: UInt32
    private let arrivedAt: UInt64
    private(set) var state = State.offered
    private(set) var media: SIPCallMedia
    /// The caller's offer; nil while Parley's own offer (in its 200, for an INVITE without one)
    /// waits for the answer in the ACK.
    private var offerSDP: SessionDescription?
    private var offer: PhoneAudioOffer
    /// The law the session's audio is in: the codec first agreed (an answer in the ACK may choose
    /// the other, and the call's audio is then converted).
    private var sessionLaw: G711.Law = .muLaw
    private let sdpSessionID = UInt64.random(in: 1..<(1 << 62))
    private var sdpVersion: UInt64 = 1
    /// The 2xx awaiting its ACK, resent on T1 doubling to T2 (section 13.3.1.4), given up after 64*T1.
    private var unacknowledged: (response: SIPMessage, schedule: SIPAnswerRetransmission, timer: ScheduledTask?)?
    private var driver: SessionDriver?
    /// The settings for the number called or the trunk calling (`SIPRoutes`), if any.
    var route: SIPRoutes.Route?
    private var socketState = CallSidebands()
    private var ending: SIPCallEnd?
    private var metrics: SIPMetrics { agent.metrics }

    enum State: Equatable { case offered, answered, confirmed, ended }

    init(agent: SIPUserAgent, invite: SIPMessage, key: SIPTransactionKey, peer: SIPPeer, offer given: (PhoneAudioOffer, SessionDescription)?,
         callID: String, arrivedAt: UInt64) throws(SystemError) {
        self.agent = agent
        self.invite = invite
        inviteKey = key
        self.peer = peer
        let offer = given?.0 ?? .awaitingAnswer(from: peer.address.description)
        self.offer = offer
        offerSDP = given?.1
        self.callID = callID
        self.arrivedAt = arrivedAt
        id = "rtc_" + SIPUserAgent.tag() + SIPUserAgent.tag()
        let from = try? invite.from()
        remoteTag = from?.tag
        remoteURI = from.map { SIPNameAddress(displayName: $0.displayName, uri: $0.uri).description } ?? "<sip:anonymous@anonymous.invalid>"
        localURI = invite.value("To") ?? "<sip:parley@invalid>"
        remoteTarget = (try? invite.contacts())?.first?.uri.description ?? from?.uri.description ?? ""
        // Section 12.1.1: the UAS's route set is the Record-Route values in order.
        routeSet = invite.values("Record-Route").flatMap { $0.split(separator: ",").map { String($0.trimmingSpaces()) } }
        remoteCSeq = (try? invite.cseq().number) ?? 0
        let settings = agent.settings
        media = try SIPCallMedia(loop: agent.loop, host: settings.rtpBind, ports: settings.rtpPorts, offer: offer, signalling: peer.address,
                                 playout: agent.playout, timeoutSeconds: settings.mediaTimeoutSeconds, metrics: agent.metrics)
        media.call = self
    }

    // MARK: Answering

    /// The INVITE is taken: answered at once with the server's settings for calls (a webhook, when
    /// one is configured, decides instead: `SIPEndpoint`).
    func begin() {
        metrics.callsOpen.add(1)
        sipLog("call offered", ["from": remoteURI, "codec": offer.codec.encoding, "rtp": "\(offer.address):\(offer.port)"])
        agent.endpoint.offered(self)
    }

    /// 180 Ringing, while the application decides (the webhook).
    func ring() {
        guard state == .offered else { return }
        agent.respond(response(180), key: inviteKey)
    }

    /// The call is answered: its session opens with `session` on top of the server's call
    /// settings, and the 200 OK with the SDP answer goes out.
    func accept(session: SessionUpdate?) {
        guard state == .offered else { return }
        openSession(session)
        var ok = response(200)
        for header in SIPSessionTimerAnswer.headers(for: invite) { ok.add(header.name, header.value) }
        ok.add("Content-Type", "application/sdp")
        ok.body = answer().bytes
        state = .answered
        agent.respond(ok, key: inviteKey)
        metrics.setup.observe(nanoseconds: MonotonicClock.nanoseconds() &- arrivedAt)
        let schedule = SIPAnswerRetransmission()
        unacknowledged = (ok, schedule, agent.loop.schedule(after: Double(schedule.firstWait) / 1e9) { [weak self] in self?.resendAnswer() })
        if let greeting = route?.greeting ?? agent.settings.greeting, !greeting.isEmpty { driver?.say(greeting) }
    }

    /// The call is refused with `status` (603 Decline unless said).
    func reject(status: Int = 603) {
        guard state == .offered else { return }
        metrics.refused.add(1, .rejected)
        agent.respond(response(status), key: inviteKey)
        end(.rejected, bye: false)
    }

    private func resendAnswer() {
        guard state == .answered, var pending = unacknowledged else { return }
        switch pending.schedule.fired() {
        case .giveUp:
            // Section 13.3.1.4: no ACK within 64*T1, the dialog ends with a BYE.
            unacknowledged = nil
            hangUp(.noAck)
        case .resend(let wait):
            agent.send(pending.response, to: peer)
            pending.timer = agent.loop.schedule(after: Double(wait) / 1e9) { [weak self] in self?.resendAnswer() }
            unacknowledged = pending
        }
    }

    func acknowledged(_ ack: SIPMessage) {
        unacknowledged?.timer?.cancel()
        unacknowledged = nil
        if state == .answered { state = .confirmed }
        // The answer to Parley's offer, for an INVITE that had none.
        if offerSDP == nil, !ack.body.isEmpty, let sdp = try? SessionDescription(parsing: ack.body), let answer = try? PhoneAudioOffer(sdp) {
            offer = answer
            offerSDP = sdp
            media.update(answer)
        }
    }

    /// CANCEL before the answer: 487 to the INVITE, and the call is over (section 9.2).
    func cancelled() {
        guard state == .offered else { return }
        agent.respond(response(487), key: inviteKey)
        end(.cancelled, bye: false)
    }

    // MARK: In the dialog

    func inDialog(_ request: SIPMessage, key: SIPTransactionKey) {
        let method = request.method ?? ""
        if let cseq = try? request.cseq() {
            // Section 12.2.2: a request older than the last is out of order.
            if cseq.number < remoteCSeq && method != "ACK" { return agent.respond(.response(to: request, status: 500, reason: "Server Internal Error (CSeq out of order)"), key: key) }
            remoteCSeq = max(remoteCSeq, cseq.number)
        }
        switch method {
        case "BYE":
            agent.respond(.response(to: request, status: 200), key: key)
            end(transferring ? .transferred : .callerBye, bye: false)
        case "INVITE", "UPDATE":
            // A re-INVITE or UPDATE: hold, resume, a moved address, or a session refresh (RFC 4028),
            // answered with the call's SDP (a new version when the media changed).
            var ok = SIPMessage.response(to: request, status: 200)
            ok.add("Contact", contact)
            ok.add("Allow", SIPUserAgent.allow)
            for header in SIPSessionTimerAnswer.headers(for: request) { ok.add(header.name, header.value) }
            if !request.body.isEmpty, let sdp = try? SessionDescription(parsing: request.body), let reoffer = try? PhoneAudioOffer(sdp) {
                if reoffer != offer {
                    offer = reoffer
                    offerSDP = sdp
                    sdpVersion += 1
                    media.update(reoffer)
                }
                ok.add("Content-Type", "application/sdp")
                ok.body = answer().bytes
            } else if !request.body.isEmpty {
                return agent.respond(.response(to: request, status: 488), key: key)
            } else if method == "INVITE" {
                // An offerless re-INVITE: our offer in the 200, its answer in the ACK (ignored:
                // the media stays as it is).
                ok.add("Content-Type", "application/sdp")
                ok.body = answer().bytes
            }
            agent.respond(ok, key: key)
        case "INFO":
            // SIP INFO keys (application/dtmf-relay: "Signal=5"), which some PBXs send instead of RFC 4733.
            let text = String(decoding: request.body, as: UTF8.self)
            if let line = text.split(whereSeparator: \.isNewline).first(where: { $0.lowercased().hasPrefix("signal") }),
               let key = line.split(separator: "=").last?.trimmingSpaces().first {
                pressed(key)
            }
            agent.respond(.response(to: request, status: 200), key: key)
        case "NOTIFY":
            agent.respond(.response(to: request, status: 200), key: key)
            // The transfer's new call answered (a sipfrag of 2xx, RFC 3515 section 2.4.5): this one ends.
            let frag = String(decoding: request.body.prefix(64), as: UTF8.self)
            if transferring, frag.hasPrefix("SIP/2.0 2") { end(.transferred, bye: true) }
        case "OPTIONS":
            agent.respond(.response(to: request, status: 200), key: key)
        default:
            var refused = SIPMessage.response(to: request, status: 405)
            refused.add("Allow", SIPUserAgent.allow)
            agent.respond(refused, key: key)
        }
    }

    // MARK: Ending

    /// The server ends the call: a BYE (or, before the answer, a 480 to the INVITE).
    func hangUp(_ why: SIPCallEnd = .serverBye) {
        switch state {
        case .ended: return
        case .offered:
            agent.respond(response(480), key: inviteKey)
            end(why, bye: false)
        case .answered, .confirmed:
            end(why, bye: true)
        }
    }

    private func end(_ why: SIPCallEnd, bye: Bool) {
        guard state != .ended else { return }
        if bye { agent.send(request: request("BYE"), to: peer) { _ in } }
        state = .ended
        ending = why
        unacknowledged?.timer?.cancel()
        unacknowledged = nil
        transferDeadline?.cancel()
        transferDeadline = nil
        keyFlush?.cancel()
        media.close()
        metrics.callsOpen.add(-1)
        metrics.calls.add(1, why)
        sipLog("call ended", ["end": why.rawValue])
        socketState.closeAll()
        driver?.close(code: why == .callerBye || why == .serverBye ? .normal : .goingAway)
        driver = nil
        agent.endpoint.ended(self)
        agent.forget(self)
    }

    // MARK: Messages

    var contact: String {
        let settings = agent.settings
        switch peer.transport {
        case "TLS": return "<sip:parley@\(settings.advertised):\(settings.tls?.port ?? settings.port);transport=tls>"
        case "TCP": return "<sip:parley@\(settings.advertised):\(settings.port);transport=tcp>"
        default: return "<sip:parley@\(settings.advertised):\(settings.port)>"
        }
    }

    /// A response to the INVITE, with our tag, Contact and what we allow.
    private func response(_ status: Int) -> SIPMessage {
        var response = SIPMessage.response(to: invite, status: status, toTag: localTag, source: nil)
        if status > 100 && status < 300 {
            response.add("Contact", contact)
            response.add("Allow", SIPUserAgent.allow)
            response.add("Supported", "timer")
            if let expires = invite.value("Session-Expires"), status == 200 {
                // RFC 4028 section 9: the caller refreshes (it asked for the timer, or may).
                let seconds = expires.split(separator: ";").first.map { String($0.trimmingSpaces()) } ?? "1800"
                response.add("Session-Expires", "\(seconds);refresher=uac")
                response.add("Require", "timer")
            }
        }
        return response
    }

    /// A request in the dialog (section 12.2.1.1): to the remote target, through the route set.
    private func request(_ method: String, headers extra: [SIPHeader] = []) -> SIPMessage {
        localCSeq += 1
        let settings = agent.settings
        var message = SIPMessage(.request(method: method, uri: SIPURI(remoteTarget) ?? SIPURI(host: agent.settings.advertised)))
        message.add("Via", "SIP/2.0/\(peer.transport) \(settings.advertised):\(settings.port);branch=\(SIPVia.branch(random: OpenSSL.randomBytes(8)));rport")
        message.add("Max-Forwards", "70")
        var from = SIPNameAddress(localURI) ?? SIPNameAddress(uri: SIPURI(host: settings.advertised))
        from.tag = localTag
        message.add("From", from.description)
        message.add("To", remoteURI + (remoteTag.map { ";tag=\($0)" } ?? ""))
        message.add("Call-ID", callID)
        message.add("CSeq", "\(localCSeq) \(method)")
        for route in routeSet.reversed() { message.add("Route", route) }
        message.add("Contact", contact)
        message.headers += extra
        return message
    }

    /// Parley's SDP: the answer to the caller's offer, or Parley's own offer while it has none.
    private func answer() -> SessionDescription {
        guard let offerSDP else {
            return PhoneAudioOffer.offer(address: agent.settings.advertised, port: media.localPort, sessionID: sdpSessionID, version: sdpVersion)
        }
        return offer.answer(to: offerSDP, address: agent.settings.advertised, port: media.localPort, sessionID: sdpSessionID, version: sdpVersion)
    }

    // MARK: The session

    private func openSession(_ session: SessionUpdate?) {
        sessionLaw = offer.codec == .pcmu ? .muLaw : .aLaw
        // The SIP leg fixes the audio: G.711 as negotiated, whatever a session.update says.
        let options = SessionEngine.Options(phoneCall: agent.endpoint.sessions, format: offer.codec == .pcmu ? .pcmu : .pcma,
                                            sessions: [agent.settings.session, route?.session, session])
        let driver = SessionDriver(phoneCall: agent.endpoint.sessions, options: options, wire: self)
        self.driver = driver
        driver.open(self)
    }

    func heard(_ frame: [UInt8]) {
        guard let driver, state != .ended else { return }
        let law: G711.Law = offer.codec == .pcmu ? .muLaw : .aLaw
        driver.feedAudio { $0.g711(frame, law) }
    }

    /// A key: the DTMF event to the sidebands, and, after a pause or `#`, a turn of the
    /// conversation ("The caller pressed 1 2 3 #."), as on `/twilio`.
    func pressed(_ key: Character) {
        metrics.dtmf.add(1)
        guard let driver else { return }
        socketState.send(text: JSON.object([("type", .string("input_audio_buffer.dtmf_event_received")), ("event", .string(String(key))),
                                            ("received_at", .int(WallClock.seconds()))]).description)
        keys.append(key)
        keyFlush?.cancel()
        guard key != "#", keys.count < 32 else { return flushKeys(driver) }
        keyFlush = agent.loop.schedule(after: 1.5) { [weak self] in
            guard let self, let driver = self.driver else { return }
            self.flushKeys(driver)
        }
    }

    private var keys: [Character] = []
    /// A REFER was accepted: the call ends when the new one is up (a NOTIFY, the phone's BYE), or
    /// at this deadline.
    private var transferDeadline: ScheduledTask?
    private var transferring: Bool { transferDeadline != nil }
    private var keyFlush: ScheduledTask?

    private func flushKeys(_ driver: SessionDriver) {
        keyFlush = nil
        guard !keys.isEmpty else { return }
        let said = keys.map(String.init).joined(separator: " ")
        keys = []
        driver.userSaid("The caller pressed \(said) on the keypad.")
    }

    func mediaTimedOut() { hangUp(.mediaTimeout) }

    /// A sideband WebSocket's events from now on (OpenAI's `?call_id=`).
    func attach(sideband: Handoff<WebSocket>, on remote: LoopHandle, id: ObjectIdentifier) {
        guard state != .ended else { return remote.execute { sideband.value.close(.normal, reason: "the call ended") } }
        socketState.sidebands[id] = RelayedSocket(home: agent.loop, remote: remote, socket: sideband)
    }

    func detach(sideband id: ObjectIdentifier) { socketState.sidebands[id] = nil }

    /// A client event from a sideband.
    func receive(sidebandText text: String) { driver?.receiveClientEvent(text: text) }

    func control(_ action: CallControl) {
        switch action {
        case .accept(let session): accept(session: session)
        case .reject(let status): reject(status: status)
        case .refer(let target): refer(to: target)
        case .hangUp: hangUp(.serverBye)
        }
    }

    /// Transfers the call with a REFER (RFC 3515): on its 2xx the caller's phone calls `target`,
    /// and this call ends (its BYE comes from the caller once the new call is up, or ours now).
    func refer(to target: String) {
        guard state == .answered || state == .confirmed else { return }
        let referTo = target.hasPrefix("<") ? target : "<\(target)>"
        agent.send(request: request("REFER", headers: [SIPHeader("Refer-To", referTo), SIPHeader("Referred-By", contact)]), to: peer) { [weak self] response in
            guard let self, let status = response?.status else { return }
            if (200..<300).contains(status) {
                // RFC 3515: the phone reports the new call's progress in NOTIFYs and hangs up this
                // one when it is up; a phone that does neither within 32 s is hung up on.
                self.sipLog("call transfer accepted", ["status": "\(status)"])
                self.transferDeadline = self.agent.loop.schedule(after: 32) { [weak self] in self?.end(.transferred, bye: true) }
            } else {
                self.sipLog("transfer refused", ["status": "\(status)"])
            }
        }
    }

    private func sipLog(_ message: Logger.Message, _ metadata: [String: String]) {
        var fields: Logger.Metadata = ["call": "\(id)"]
        for (key, value) in metadata { fields[key] = "\(value)" }
        sessionLog.info(message, metadata: fields)
    }
}

// MARK: The session's socket and wire

extension SIPCall: SessionSocket, SessionWire {
    var loop: EventLoop { agent.loop }
    func send(text: String) { socketState.send(text: text) }
    func send(binary: [UInt8]) {}
    /// The session ends the call (a limit, a drain): a BYE on the next pass, not inside the
    /// session's own call.
    func close(_ code: WebSocketCloseCode, reason: String) {
        _ = agent.loop.schedule(after: 0) { [weak self] in self?.hangUp(.serverBye) }
    }
    var isOpen: Bool { state != .ended }
    var hasClient: Bool { true }
    func account(handlerBytes: Int) {}

    var endpointName: String { "sip" }

    func send(_ event: ServerEvent, on socket: any SessionSocket) {
        guard !socketState.sidebands.isEmpty else { return }
        socketState.send(text: event.json(dialect: .ga))
    }

    func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket) {
        guard case .pcm(let base64) = piece, let bytes = Base64.decode(base64.utf8) else { return }
        let law: G711.Law = media.codec == .pcmu ? .muLaw : .aLaw
        media.queue(law == sessionLaw ? bytes : G711.encode(G711.decode(bytes, sessionLaw), law), responseID: at.responseID)
    }

    /// What the caller heard: what went out (the queue is paced to real time, a packet a tick).
    func heardMs(of responseID: String) -> Int? { media.sentMs(of: responseID) }

    /// The caller's speech paused the reply: what waits to be sent is dropped (as `/twilio`'s
    /// `clear`), and the reply resumes from what went out.
    var resendsAfterPause: Bool { true }

    func speechPaused(responseID: String, on socket: any SessionSocket) -> Int? {
        let heard = media.sentMs(of: responseID)
        media.clearQueue()
        return heard
    }

    func speechStopped(responseID: String, on socket: any SessionSocket) { media.clearQueue() }
}

/// The sideband WebSockets of a call: each gets the session's events.
struct CallSidebands {
    var sidebands: [ObjectIdentifier: RelayedSocket] = [:]

    func send(text: String) {
        for sideband in sidebands.values { sideband.send(text: text) }
    }

    mutating func closeAll() {
        for sideband in sidebands.values { sideband.close(.normal, reason: "the call ended") }
        sidebands = [:]
    }
}
