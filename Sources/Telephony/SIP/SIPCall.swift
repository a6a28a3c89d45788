import Codec
import Loop
import Media
import Server
import Session
import SIP
import SessionEngine

/// One SIP call, a dialog shell: its dialog (`SIPDialog`, which decides every message and
/// time-out) carried out on the loop, its media leg (`SIPCallMedia`: G.711 in each playout tick,
/// replies out as RTP), and the conversation of whichever API answered it (`CallConversation`:
/// SIPCall+Session.swift), which it never asks about. Screening a placed call, call control and
/// its memory account are in the files beside this one.
final class SIPCall: SIPCallMediaOwner, CallCarrier {
    /// The id call control names it by: `rtc_…`, as OpenAI's `call_id`; or, when the webhook
    /// announces calls to GPT-Live, `sess_…`, its `session_id`, which its Live session takes.
    let id: String
    unowned let agent: SIPUserAgent
    let peer: SIPPeer
    var dialog: SIPDialog
    private(set) var media: SIPCallMedia
    let arrivedAt: UInt64
    /// The law the session's audio is in: the codec first agreed (an answer in the ACK may choose
    /// the other, and the call's audio is then converted).
    var sessionLaw: G711.Law = .muLaw
    /// The API's side of the call (`CallAPI` chose it): its session, its listeners' dialect; and
    /// its driver, read once here: the send tick pulls the reply's frames from it 50 times a second.
    var conversation: (any CallConversation)? { didSet { replies = conversation?.driver } }
    private(set) var replies: SessionDriver?
    /// The settings for the number called or the trunk calling (`SIPRoutes`), if any.
    var route: SIPRoutes.Route?
    /// The call as sidebands and call control reach it by its id (a placed call's, from its
    /// dialer's ringing on).
    let line: CallLine
    var keypad = KeypadEntry()
    /// A placed call's screening (SIPCall+Screening.swift); none on calls Parley answered.
    var screening = Screening()
    /// A placed call's place on its trunk (`SIPTrunkLimits`), given back as it ends.
    private var trunkPlace: SIPTrunkPlace?
    /// One timer for the dialog's and the keypad's next deadline.
    private var timer: ScheduledTask?
    /// Its share of `parley_accounted_bytes`, under `sip`, its session's included.
    var memory: CallAccount
    var metrics: SIPMetrics { agent.metrics }

    var callID: String { dialog.callID }
    var invite: SIPMessage { dialog.invite }

    /// A call offered by an INVITE; `crypto`: our SRTP key, when its media is RTP/SAVP.
    init(agent: SIPUserAgent, invite: SIPMessage, key: SIPTransactionKey, peer: SIPPeer, offer given: (PhoneAudioOffer, SessionDescription)?,
         crypto: SDESCrypto?, arrivedAt: UInt64) throws(SystemError) {
        self.agent = agent
        self.peer = peer
        self.arrivedAt = arrivedAt
        id = Self.newID(live: agent.endpoint.webhook?.api == .live)
        media = try SIPCallMedia(agent: agent, offer: given?.0 ?? .awaitingAnswer(from: peer.address.description), peer: peer, crypto: crypto)
        let local = media.local(agent: agent, peer: peer, crypto: crypto)
        dialog = SIPDialog(invite: invite, key: key, localTag: SIPUserAgent.tag(), local: local, offer: given, source: peer.address.description,
                           sdpSessionID: UInt64.random(in: 1..<(1 << 62)))
        memory = CallAccount(.sip, on: agent.loop)
        line = CallLine(id: id, on: agent.loop)
        media.call = self
        line.carrier = self
    }

    /// A call Parley placed, answered (`SIPDialOut`): its dialog (confirmed, the ACK sent), its
    /// media, and its line, which sidebands found while it rang.
    init(agent: SIPUserAgent, dialed dialog: SIPDialog, media: SIPCallMedia, peer: SIPPeer, placedAt: UInt64, line: CallLine, trunk: SIPTrunkPlace?) {
        (trunkPlace, self.agent, id, self.peer, self.dialog, self.media, arrivedAt, self.line) = (trunk, agent, line.id, peer, dialog, media, placedAt, line)
        memory = CallAccount(.sip, on: agent.loop)
        media.call = self
        line.carrier = self
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
    func ring() {
        line.moved(to: .ringing)
        carry(dialog.ring())
    }

    /// The call is answered: its conversation opens in `api`, the 200 OK with the SDP answer goes
    /// out, and the conversation is given the greeting for the number called, if there is one.
    func accept(_ api: CallAPI) {
        guard dialog.state == .offered else { return }
        converse(api)
        line.moved(to: .answered)
        carry(dialog.accept(now: agent.loop.nanoseconds()))
        metrics.setup.observe(nanoseconds: agent.loop.nanoseconds() &- arrivedAt)
        if let greeting = route?.greeting ?? agent.settings.greeting, !greeting.isEmpty { conversation?.greet(greeting) }
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

    /// What the dialog asked for, done; then its next deadline (and the keypad's) on the timer.
    func carry(_ actions: [SIPDialog.Action]) {
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

    private func fire() {
        timer = nil
        let now = agent.loop.nanoseconds()
        if let entry = keypad.fire(now: now) { conversation?.userSaid(entry) }
        carry(dialog.fire(now: now))
    }

    private func ended(_ why: SIPDialogEnd) {
        media.close()
        screening.end()
        trunkPlace = nil
        metrics.callsOpen.add(-1)
        metrics.calls.add(1, why)
        sipLog("call ended", ["end": why.rawValue])
        line.end(reason: why.rawValue)
        conversation?.close(why.sessionEnding, reason: why.closeReason)
        conversation = nil
        agent.forget(self)
    }
}
