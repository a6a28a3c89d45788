import Access
import Codec
import JSON
import Logging
import Loop
import Media
import Server
import Session
import SIP
import SessionEngine

/// One SIP call: its dialog (`SIPDialog`, which decides every message and time-out) carried out
/// on the loop, and its session, the same engine and driver as `/twilio`'s calls, fed 20 ms of
/// G.711 each playout tick (`SIPCallMedia`), its replies sent back as RTP.
///
/// The call is the session's socket and wire: events go to the sideband WebSockets attached with
/// `?call_id=` (none until one attaches), audio to the caller's RTP.
final class SIPCall: SIPCallMediaOwner, DirectedCall {
    /// The id call control names it by: `rtc_…`, as OpenAI's `call_id`; or, when the webhook
    /// announces calls to GPT-Live, `sess_…`, its `session_id`, which its Live session takes.
    let id: String
    unowned let agent: SIPUserAgent
    let peer: SIPPeer
    private(set) var dialog: SIPDialog
    private(set) var media: SIPCallMedia
    private let arrivedAt: UInt64
    /// The law the session's audio is in: the codec first agreed (an answer in the ACK may choose
    /// the other, and the call's audio is then converted).
    private(set) var sessionLaw: G711.Law = .muLaw
    private var driver: SessionDriver?
    /// The call's GPT-Live session, when the application accepted it as one (`acceptLive`).
    private var live: LiveSession?
    /// The settings for the number called or the trunk calling (`SIPRoutes`), if any.
    var route: SIPRoutes.Route?
    private(set) var socketState = CallSidebands()
    private var keypad = KeypadEntry()
    /// Who answered a placed call, and what its session does about it (nil on calls Parley
    /// answered, and once it has nothing more to do).
    private var gate: AnsweredCallGate<[UInt8]>?
    /// While the message left on a machine is said: the check for its end.
    private var messageCheck: ScheduledTask?
    /// A placed call's place on its trunk (`SIPTrunkLimits`), given back as it ends.
    private var trunkPlace: SIPTrunkPlace?
    /// One timer for the dialog's and the keypad's next deadline.
    private var timer: ScheduledTask?
    /// Its share of `parley_accounted_bytes`, under `sip`: the call's own state and its session's.
    private var memory: MemoryAccount
    /// What its session last accounted (the engine, the audio input, the echo guard...).
    private var sessionBytes = 0
    private var metrics: SIPMetrics { agent.metrics }

    var callID: String { dialog.callID }
    var invite: SIPMessage { dialog.invite }

    /// `crypto`: our SRTP key, when the call's media is RTP/SAVP (`SIPUserAgent` decides).
    init(agent: SIPUserAgent, invite: SIPMessage, key: SIPTransactionKey, peer: SIPPeer, offer given: (PhoneAudioOffer, SessionDescription)?,
         crypto: SDESCrypto?, arrivedAt: UInt64) throws(SystemError) {
        self.agent = agent
        self.peer = peer
        self.arrivedAt = arrivedAt
        id = Self.newID(live: agent.endpoint.webhook?.api == .live)
        let settings = agent.settings
        let offer = given?.0 ?? .awaitingAnswer(from: peer.address.description)
        media = try SIPCallMedia(loop: agent.loop, host: settings.rtpBind, ports: settings.rtpPorts, offer: offer, signalling: peer.address,
                                 playout: agent.playout, timeoutSeconds: settings.mediaTimeoutSeconds, metrics: agent.metrics, crypto: crypto)
        let local = SIPDialog.Local(contact: settings.contact(over: peer.transport), mediaHost: settings.advertised, mediaPort: media.localPort, crypto: crypto)
        dialog = SIPDialog(invite: invite, key: key, localTag: SIPUserAgent.tag(), local: local, offer: given, source: peer.address.description,
                           sdpSessionID: UInt64.random(in: 1..<(1 << 62)))
        memory = MemoryAccount(.sip, on: agent.loop)
        media.call = self
    }

    /// A call Parley placed, answered (`SIPDialOut`): its dialog (confirmed, the ACK sent), its
    /// media, and the sidebands that attached while it rang.
    init(agent: SIPUserAgent, id: String, dialed dialog: SIPDialog, media: SIPCallMedia, peer: SIPPeer, placedAt: UInt64, sidebands: CallSidebands,
         trunk: SIPTrunkPlace?) {
        trunkPlace = trunk
        self.agent = agent
        self.id = id
        self.peer = peer
        self.dialog = dialog
        self.media = media
        arrivedAt = placedAt
        socketState = sidebands
        memory = MemoryAccount(.sip, on: agent.loop)
        media.call = self
    }

    /// The placed call's session opens: a Realtime one with its settings on top of the server's
    /// call settings, or a GPT-Live one (the callee speaks first: the session answers its "hello"),
    /// the answering-machine detection deciding who answered and `answeringMachine` what then.
    /// `admitted`: the tenant's place, which the session holds.
    func answered(session: SIPDialRequest.Session, answeringMachine: AnsweringMachinePolicy, admitted: Admitted) {
        metrics.callsOpen.add(1)
        gate = AnsweredCallGate(policy: answeringMachine)
        CallDirectory.shared.add(id, self, on: agent.loop)
        switch session {
        case .realtime(let update): openSession(update, admitted: admitted)
        case .live(let config): openLive(config, admitted: admitted)
        }
        carry([])
    }

    /// The INVITE is taken: answered at once with the server's settings for calls (a webhook, when
    /// one is configured, decides instead: `SIPEndpoint`).
    func begin() {
        metrics.callsOpen.add(1)
        let offer = dialog.offer
        sipLog("call offered", ["from": dialog.remoteURI, "codec": offer.codec.encoding, "rtp": "\(offer.address):\(offer.port)"])
        agent.endpoint.offered(self)
    }

    /// 180 Ringing, while the application decides (the webhook).
    func ring() { carry(dialog.ring()) }

    /// The call is answered: its session opens with `session` on top of the server's call
    /// settings, and the 200 OK with the SDP answer goes out.
    func accept(session: SessionUpdate?) {
        guard dialog.state == .offered else { return }
        openSession(session)
        carry(dialog.accept(now: agent.loop.nanoseconds()))
        metrics.setup.observe(nanoseconds: agent.loop.nanoseconds() &- arrivedAt)
        if let greeting = route?.greeting ?? agent.settings.greeting, !greeting.isEmpty { driver?.say(greeting) }
    }

    /// The call is answered by a GPT-Live session with `config` (`live.transport.incoming`'s accept):
    /// its session's events go to the sidebands attached by its id, its audio is the call's.
    func acceptLive(_ config: LiveSessionConfig) {
        guard dialog.state == .offered else { return }
        openLive(config)
        carry(dialog.accept(now: agent.loop.nanoseconds()))
        metrics.setup.observe(nanoseconds: agent.loop.nanoseconds() &- arrivedAt)
    }

    /// The call is refused with `status` (603 Decline unless said).
    func reject(status: Int = 603) {
        if dialog.state == .offered { metrics.refused.add(1, .rejected) }
        carry(dialog.reject(status: status))
    }

    func acknowledged(_ ack: SIPMessage) { carry(dialog.acknowledged(ack)) }
    func cancelled() { carry(dialog.cancelled()) }
    func inDialog(_ request: SIPMessage, key: SIPTransactionKey) { carry(dialog.received(request, key: key)) }
    /// The server ends the call: a BYE (or, before the answer, a 480 to the INVITE).
    func hangUp(_ why: SIPDialogEnd = .serverBye) { carry(dialog.hangUp(why)) }
    func mediaTimedOut() { hangUp(.mediaTimeout) }

    /// Transfers the call with a REFER (RFC 3515): on its 2xx the caller's phone calls `target`,
    /// and this call ends (its BYE comes from the caller once the new call is up, or ours later).
    func refer(to target: String) { carry(dialog.refer(to: target)) }

    /// What the dialog asked for, done; then its next deadline (and the keypad's) on the timer.
    private func carry(_ actions: [SIPDialog.Action]) {
        for action in actions {
            switch action {
            case .respond(let message, let key): agent.respond(message, key: key)
            case .resend(let message): agent.send(message, to: peer)
            case .request(let message): send(message)
            case .media(let offer): media.update(offer)
            case .key(let key): pressed(key)
            case .ended(let why): ended(why)
            }
        }
        timer?.cancel()
        let next = [dialog.nextDeadline, keypad.deadline].compactMap { $0 }.min()
        timer = next.map { agent.loop.schedule(at: $0) { [weak self] in self?.fire() } }
        account()
    }

    /// Reports what the call holds: itself, its dialog, its media, its keypad and sidebands, and
    /// what its session last said it holds; nothing once it has ended.
    func account() {
        guard dialog.state != .ended else { return memory.close() }
        memory.report(HeapSize.of(self) + dialog.heapBytes + media.heapBytes + keypad.heapBytes + socketState.heapBytes + sessionBytes)
    }

    /// The call's session reports what it holds (`SessionSocket.account`).
    func account(sessionBytes bytes: Int) {
        sessionBytes = bytes
        account()
    }

    private func fire() {
        timer = nil
        let now = agent.loop.nanoseconds()
        if let entry = keypad.fire(now: now) { said(entry) }
        carry(dialog.fire(now: now))
    }

    private func send(_ request: SIPMessage) {
        agent.send(request: request, to: peer) { [weak self] response in
            guard let self, request.method == "REFER", let status = response?.status else { return }
            sipLog((200..<300).contains(status) ? "call transfer accepted" : "transfer refused", ["status": "\(status)"])
            dialog.referAnswered(status: status, now: agent.loop.nanoseconds())
            carry([])
        }
    }

    private func ended(_ why: SIPDialogEnd) {
        media.close()
        messageCheck?.cancel()
        gate = nil
        trunkPlace = nil
        metrics.callsOpen.add(-1)
        metrics.calls.add(1, why)
        sipLog("call ended", ["end": why.rawValue])
        socketState.closeAll()
        let ending: SessionEnding = why == .callerBye || why == .serverBye ? .ended : .wentAway
        driver?.close(ending)
        driver = nil
        live?.close(ending, reason: why == .callerBye ? "remote_hangup" : why == .serverBye ? "close_requested" : "connection_lost")
        live = nil
        agent.endpoint.ended(self)
        agent.forget(self)
    }

    // MARK: The session

    /// The call's session settings: the server's and its route's for calls, then `session`; the
    /// SIP leg fixes the audio: G.711 as negotiated, whatever a session says.
    private func sessionOptions(_ session: SessionUpdate? = nil) -> SessionEngine.Options {
        let codec = dialog.offer.codec
        sessionLaw = codec == .pcmu ? .muLaw : .aLaw
        return SessionEngine.Options(phoneCall: agent.endpoint.sessions, format: codec == .pcmu ? .pcmu : .pcma,
                                     sessions: [agent.settings.session, route?.session, session])
    }

    /// The call's GPT-Live session, started with `config`; sidebands already attached (while a
    /// placed call rang) are its own from now on.
    private func openLive(_ config: LiveSessionConfig, admitted: Admitted = .phoneCall) {
        let session = LiveSession(endpoint: agent.endpoint.sessions, admitted: admitted,
                                  options: sessionOptions(), endpointName: "sip (live)", traceparent: nil, phoneCall: (id, self))
        live = session
        session.adopt(socketState)
        socketState = CallSidebands()
        session.open(self)
        session.start(config)
    }

    private func openSession(_ session: SessionUpdate?, admitted: Admitted = .phoneCall) {
        let options = sessionOptions(session)
        let driver = SessionDriver(phoneCall: agent.endpoint.sessions, admitted: admitted, options: options, wire: self)
        self.driver = driver
        driver.open(self)
    }

    func heard(_ frame: [UInt8]) {
        guard dialog.state != .ended else { return }
        let law: G711.Law = dialog.offer.codec == .pcmu ? .muLaw : .aLaw
        guard gate != nil else { return hear(frame, law) }
        for action in gate!.heard(frame, samples: G711.decode(frame, law)) {
            switch action {
            case .hear(let frames): for frame in frames { hear(frame, law) }
            case .decided(let verdict): decided(verdict)
            case .silence:
                sessionDriver?.stopAnswering()
                media.clearQueue()
            case .say(let message):
                sipLog("leaving a message", [:])
                sessionDriver?.say(message)
                awaitMessageSaid()
            case .hangUp:
                hangUp(.serverBye)
            }
        }
        if gate?.phase == .conversing { gate = nil }
    }

    private func hear(_ frame: [UInt8], _ law: G711.Law) {
        if let live { return live.feedCall { $0.g711(frame, law) } }
        driver?.feedAudio { $0.g711(frame, law) }
    }

    /// The call's session's driver, a Realtime or a GPT-Live one.
    private var sessionDriver: SessionDriver? { live?.driver ?? driver }

    /// Who answered the call Parley placed: to the sidebands (GPT-Live's as an `info`, the Realtime
    /// API's as `transport.answered_by`), the report, the log and /metrics.
    private func decided(_ verdict: AnsweringMachineDetector.Verdict) {
        metrics.answeredBy.add(1, verdict.answer)
        sipLog("answered by", ["answer": verdict.answer.rawValue, "reason": verdict.reason, "after_ms": "\(verdict.afterMs)"])
        sessionDriver?.noteAnsweredBy(verdict)
        if let live {
            return live.notice("answered_by", "\(verdict.answer.rawValue) (\(verdict.reason)), decided \(verdict.afterMs) ms after the answer")
        }
        socketState.send(text: JSON.object([("type", .string("transport.answered_by")), ("call_id", .string(id)), ("answered_by", .string(verdict.answer.rawValue)),
                                            ("reason", .string(verdict.reason)), ("decided_after_ms", .int(verdict.afterMs))]).description)
    }

    /// The message left on a machine is said once its reply has ended and its audio has gone out
    /// (checked every 200 ms; 2 minutes at most): then the call ends.
    private func awaitMessageSaid(checks: Int = 0) {
        messageCheck = agent.loop.schedule(after: 0.2) { [weak self] in
            guard let self, dialog.state != .ended else { return }
            let said = sessionDriver.map { !$0.isReplying } ?? true
            guard (said && !media.isSending) || checks >= 600 else { return awaitMessageSaid(checks: checks + 1) }
            sipLog("message left", [:])
            if let actions = gate?.messageSaid() {
                for case .hangUp in actions { hangUp(.serverBye) }
            }
        }
    }

    /// A keypad entry, a turn of the conversation.
    private func said(_ entry: String) {
        if let live { live.userSaid(entry) } else { driver?.userSaid(entry) }
    }

    /// A key (RFC 4733 or SIP INFO): the DTMF event to the sidebands, and the keypad's entry, once
    /// complete, a turn of the conversation, as on `/twilio`.
    func pressed(_ key: Character) {
        metrics.dtmf.add(1)
        if let live {
            live.keyPressed(key)
        } else if driver != nil {
            socketState.send(text: JSON.object([("type", .string("input_audio_buffer.dtmf_event_received")), ("event", .string(String(key))),
                                                ("received_at", .int(WallClock.seconds()))]).description)
        } else {
            return
        }
        if let entry = keypad.pressed(key, now: agent.loop.nanoseconds()) { said(entry) }
        carry([])
    }

    /// A sideband WebSocket's events from now on (OpenAI's `?call_id=`).
    func attach(sideband: Handoff<WebSocket>, on remote: LoopHandle, id: ObjectIdentifier) {
        guard dialog.state != .ended else { return remote.execute { sideband.value.close(.normal, reason: "the call ended") } }
        if let live { return live.attach(sideband: sideband, on: remote, id: id) }
        socketState.attach(sideband, on: remote, id: id, home: agent.loop)
    }

    func detach(sideband id: ObjectIdentifier) {
        live?.detach(sideband: id)
        socketState.detach(id)
    }

    /// A client event from a sideband.
    func receive(sidebandText text: String) {
        if let live { return live.receive(sidebandText: text) }
        // Keys pressed on the call: GPT-Live's sideband command, on a Realtime call's sideband too.
        if text.contains("transport.dtmf.send"), let json = try? JSON(parsing: text), json["type"]?.string == "transport.dtmf.send" {
            return pressFromSideband(json)
        }
        driver?.receiveClientEvent(text: text)
    }

    /// `{"type": "transport.dtmf.send", "event": "5"}`: the key pressed on the call (RFC 4733), then
    /// `transport.dtmf.sent`; or an `error` (not a key, or a far end that takes none).
    private func pressFromSideband(_ json: JSON) {
        let eventID = json["event_id"]?.string
        guard let text = json["event"]?.string, text.count == 1, let key = text.first, media.press(key) else {
            let error: [(String, JSON)] = [("type", .string("invalid_request_error")), ("code", .string("dtmf_unavailable")),
                                           ("message", .string("'event' must be one DTMF key (0-9, A-D, * or #), and the far end must take RFC 4733 telephone-events")),
                                           ("param", .string("event"))] + (eventID.map { [("event_id", JSON.string($0))] } ?? [])
            return socketState.send(text: JSON.object([("type", .string("error")), ("error", .object(error))]).description)
        }
        socketState.send(text: JSON.object([("type", .string("transport.dtmf.sent")), ("event", .string(text))]
                                           + (eventID.map { [("client_event_id", JSON.string($0))] } ?? [])).description)
    }

    func control(_ action: CallControl) {
        switch action {
        case .accept(let session): accept(session: session)
        case .acceptLive(let config): acceptLive(config)
        case .reject(let status): reject(status: status)
        case .refer(let target): refer(to: target)
        case .hangUp: hangUp(.serverBye)
        }
    }

    private func sipLog(_ message: Logger.Message, _ metadata: [String: String]) { Telephony.sipLog(id, message, metadata) }

    /// A call's id as call control names it: `rtc_…` (OpenAI's `call_id`), or for a GPT-Live
    /// session's call `sess_…` (its `session_id`, which the session takes).
    static func newID(live: Bool) -> String { (live ? "sess_" : "rtc_") + SIPUserAgent.tag() + SIPUserAgent.tag() }
}

/// A line of a SIP call's log, with the call's id.
func sipLog(_ call: String, _ message: Logger.Message, _ metadata: [String: String]) {
    var fields: Logger.Metadata = ["call": "\(call)"]
    for (key, value) in metadata { fields[key] = "\(value)" }
    sessionLog.info(message, metadata: fields)
}
