import Access
import JSON
import Logging
import Loop
import Media
import Server
import Session
import SIP
import SessionEngine

/// A phone call Parley places, while it rings (`POST /v1/realtime/calls` with a SIP transport):
/// its `SIPOutboundInvite` carried out on the loop, its RTP port open for the offer, its progress
/// told to the sidebands attached by its id (`transport.ringing`, `.answered`, `.failed`); answered,
/// it hands its dialog, media and sidebands to a `SIPCall`, whose session then opens. Call control
/// names it by its id from the start: a hangup before the answer cancels it.
final class SIPDialOut: SIPCallMediaOwner, CallCarrier {
    let id: String
    unowned let agent: SIPUserAgent
    let peer: SIPPeer
    private var invite: SIPOutboundInvite
    private let media: SIPCallMedia
    private let session: SIPDialRequest.Session
    private let answeringMachine: AnsweringMachinePolicy
    /// The tenant's place and the trunk's, held while it rings, then by the call it becomes.
    private var holding: (admitted: Admitted, trunk: SIPTrunkPlace)?
    /// The call as sidebands and call control reach it by its id, from the INVITE on: the call
    /// it becomes takes it over.
    let line: CallLine
    private var timer: ScheduledTask?
    private let placedAt: UInt64
    /// The application was told how the call ended (failed, or handed to the call it became).
    private var over = false
    /// Its INVITE is finished too (the transaction may outlive what the application was told:
    /// a hangup before any response, RFC 3261 section 9.1): its media closed, the agent told.
    private var released = false
    private var events: IDGenerator
    /// What it holds while it rings (its media, its INVITE), under `sip`; the call it becomes
    /// accounts for itself.
    private var memory: MemoryAccount

    var callID: String { invite.callID }

    init(agent: SIPUserAgent, trunk: SIPOutboundTrunk, request: SIPDialRequest, peer: SIPPeer, holding: (Admitted, SIPTrunkPlace)) throws(SystemError) {
        self.agent = agent
        self.peer = peer
        let settings = agent.settings
        placedAt = agent.loop.nanoseconds()
        // GPT-Live names a call by its session's id (`sess_…`), the Realtime API by its own (`rtc_…`).
        if case .live = request.session { id = SIPCall.newID(live: true) } else { id = SIPCall.newID(live: false) }
        events = IDGenerator(seed: placedAt)
        session = request.session
        answeringMachine = request.answeringMachine
        self.holding = holding
        // SRTP on a TLS trunk that asks for it (or on a server that demands it): our key in the offer.
        let crypto: SDESCrypto? = trunk.transport == .tls && (trunk.srtp || settings.srtp == .required) ? .fresh() : nil
        media = try SIPCallMedia(agent: agent, offer: .awaitingAnswer(from: peer.address.description), peer: peer, crypto: crypto)
        let local = media.local(agent: agent, peer: peer, crypto: crypto)
        let from = SIPURI(scheme: .sip, user: trunk.caller, host: settings.advertised)
        let destination = SIPOutboundInvite.Destination(uri: request.requestURI(at: trunk) ?? SIPURI(host: trunk.host, port: trunk.port), from: from,
                                                        credentials: trunk.credentials)
        invite = SIPOutboundInvite(destination: destination, callID: SIPUserAgent.tag() + "@parley", localTag: SIPUserAgent.tag(), local: local,
                                   sdpSessionID: UInt64.random(in: 1..<(1 << 62)), now: placedAt, ringFor: request.ringSeconds)
        memory = MemoryAccount(.sip, on: agent.loop)
        line = CallLine(id: id, on: agent.loop)
        media.call = self
        line.carrier = self
    }

    /// The INVITE goes out; the call is found by its id from now on.
    func start() {
        line.list()
        agent.metrics.dialed.add(1)
        sipLog(id, "call placed", ["to": invite.invite.requestURI?.description ?? ""])
        carry(invite.start())
        memory.report(HeapSize.of(self) + media.heapBytes + invite.invite.heapBytes + line.heapBytes)
    }

    /// A response to its INVITE (a 2xx also after its transaction ended: the ACK goes again).
    func received(_ response: SIPMessage) { carry(invite.received(response)) }

    /// The INVITE's transaction timed out with no final response.
    func timedOut() { carry(invite.timedOut()) }

    /// A BYE in the call's early dialog: it ends before it was answered.
    func hungUpEarly() { carry(invite.hungUpEarly()) }

    private func carry(_ actions: [SIPOutboundInvite.Action]) {
        for action in actions {
            switch action {
            case .invite(let message): agent.sendInvite(message, to: peer, for: self)
            case .cancel: agent.cancelInvite(of: self)
            case .ack(let message): agent.sendACK(message, to: peer, callID: callID)
            case .progress(let progress): progressed(progress)
            }
        }
        timer?.cancel()
        timer = invite.nextDeadline.map { at in
            agent.loop.schedule(at: at) { [weak self] in
                guard let self else { return }
                self.carry(self.invite.fire(now: self.agent.loop.nanoseconds()))
            }
        }
        releaseIfFinished()
    }

    private func progressed(_ progress: SIPOutboundInvite.Progress) {
        switch progress {
        case .ringing:
            line.moved(to: .ringing)
            tell("transport.ringing")
        case .earlyMedia(let offer):
            media.update(offer, answer: true)
            line.moved(to: .ringing)
            tell("transport.ringing")
        case .answered(let offer):
            media.update(offer, answer: true)
            guard !over, let dialog = invite.dialog() else { return failed(.noAcceptableAnswer) }
            over = true
            timer?.cancel()
            memory.close()
            line.moved(to: .answered)
            tell("transport.answered")
            agent.metrics.dialSetup.observe(nanoseconds: agent.loop.nanoseconds() &- placedAt)
            sipLog(id, "call answered", ["codec": offer.codec.encoding])
            let call = SIPCall(agent: agent, dialed: dialog, media: media, peer: peer, placedAt: placedAt, line: line, trunk: holding?.trunk)
            // Its media and dialog are the call's now: nothing here to release.
            released = true
            agent.answered(self, by: call)
            call.answered(session: session, answeringMachine: answeringMachine, admitted: holding?.admitted ?? .phoneCall)
            holding = nil
        case .failed(let failure):
            failed(failure)
        }
    }

    private func failed(_ failure: SIPCallFailure) {
        guard !over else { return }
        over = true
        timer?.cancel()
        var error: [(String, JSON)] = [("type", .string("call_error")), ("code", .string(failure.reason)),
                                       ("message", .string(failure.message))]
        if let status = failure.status { error.append(("sip_status", .int(status))) }
        tell("transport.failed", [("error", .object(error))])
        agent.metrics.dialFailures.add(1, failure.kind)
        sipLog(id, "call not answered", ["reason": failure.reason, "status": failure.status.map { "\($0)" } ?? "none"])
        holding = nil
        line.end(reason: failure.reason)
        releaseIfFinished()
    }

    /// Once the application was told and the INVITE can bring nothing more: a 2xx that crossed
    /// our CANCEL (or came after a hangup, or brought no usable answer) is a call to hang up; the
    /// media closes, and the agent forgets the call.
    private func releaseIfFinished() {
        guard over, !released, invite.isFinished else { return }
        released = true
        timer?.cancel()
        if var dialog = invite.dialog() {
            for case .request(let bye) in dialog.hangUp() { agent.send(request: bye, to: peer) { _ in } }
        }
        media.close()
        memory.close()
        agent.dialEnded(self)
    }

    /// A progress event to the sidebands (GPT-Live's names and shapes, `TransportRinging` and its
    /// kin, with the session's id; a Realtime call's with its `call_id`).
    private func tell(_ type: String, _ fields: [(String, JSON)] = []) {
        let key = if case .live = session { "session_id" } else { "call_id" }
        line.progress(JSON.object([("type", .string(type)), ("event_id", .string(events.make("event"))), (key, .string(id))] + fields).description)
    }

    // MARK: While it rings: no audio to hear yet (early media is the carrier's), and call control

    func heard(_ frame: [UInt8]) {}
    func pressed(_ key: Character) {}
    func sentAll() {}
    func mediaTimedOut() {}
    func pullReplyFrame() {}

    /// A hangup before the answer cancels the call (after it, the call answers control).
    func control(_ action: CallControl) {
        if case .hangUp = action { carry(invite.hangUp()) }
    }
}
