import Loop
import Media
import Server
import Session
import SIP
import TLS

/// One loop's SIP user agent (RFC 3261), over its share of the SIP port (`SIPSignallingPort`): a
/// datagram in is parsed and matched to a transaction (section 17.2.3) or a dialog (section 12.2),
/// and what is new goes to its handler: an INVITE that `SIPInviteAdmission` takes makes a
/// `SIPCall`; in-dialog requests go to theirs; OPTIONS is answered here; anything else is refused
/// as RFC 3261 says. Responses to the requests our calls send (BYE, REFER) go back to those calls.
///
/// The layers under it, as pjsip has them: the transactions (`SIPTransactionTable`, `SIP`'s value
/// machines on the loop), who may call (`SIPInviteAdmission`, a value), the calls placed through
/// trunks (`SIPTrunkCalls`) and the registrations with them (`SIPTrunkRegistrar`). Every message
/// we send goes back to the address the request came from (RFC 3581's symmetric response routing,
/// which every NATed phone relies on).
final class SIPUserAgent: SIPTransactionUser, DrainHolder {
    let loop: EventLoop
    let endpoint: SIPEndpoint
    private unowned(unsafe) var port: SIPSignallingPort!
    private(set) lazy var table = SIPTransactionTable(loop: loop, user: self)
    /// Calls by Call-ID (and, once answered, our tag: a dialog, section 12).
    private(set) var calls: [String: SIPCall] = [:]
    private var admission: SIPInviteAdmission
    private(set) lazy var trunks = SIPTrunkCalls(agent: self)
    /// The registrations with trunks, on the loop that holds them.
    var registrar: SIPTrunkRegistrar?
    let playout: PlayoutClock
    var metrics: SIPMetrics { .shared }

    init(loop: EventLoop, endpoint: SIPEndpoint, playout: PlayoutClock) {
        self.loop = loop
        self.endpoint = endpoint
        self.playout = playout
        admission = SIPInviteAdmission(settings: endpoint.settings, authenticator: endpoint.authenticator)
        LoopDrain.on(loop).hold(self)
    }

    /// A draining loop waits for these (`LoopDrain`): the calls up or ringing, and those placed.
    var callsHeld: Int { calls.count + trunks.ringing.count }

    /// The drain's bound: every call ends as the server ends one (a BYE, or 480 before the
    /// answer; a placed call still ringing is cancelled).
    func endCallsForDrain() {
        for call in Array(calls.values) { call.hangUp(.drained) }
        for dial in Array(trunks.ringing.values) { dial.control(.hangUp) }
    }

    func attach(_ port: SIPSignallingPort) { self.port = port }

    var settings: SIPEndpoint.Settings { endpoint.settings }

    // MARK: In

    func received(_ datagram: UnsafeRawBufferPointer, from peer: TransportAddress) {
        // A keep-alive (RFC 5626 section 4.4.1's CRLF, or a stray byte) is not a message.
        if datagram.allSatisfy({ $0 == 13 || $0 == 10 || $0 == 0 }) { return }
        let message: SIPMessage
        do throws(SIPParseError) {
            message = try SIPMessageParser.parse(datagram: datagram)
        } catch {
            metrics.messagesDropped.add(1, SIPDrop(error))
            return
        }
        received(message, from: .udp(peer))
    }

    /// A whole message, from a datagram or a TCP connection.
    func received(_ message: SIPMessage, from peer: SIPPeer) {
        if message.isRequest { request(message, from: peer) } else { response(message, from: peer) }
    }

    private func request(_ request: SIPMessage, from peer: SIPPeer) {
        guard let method = request.method else { return }
        guard let key = SIPTransactionKey.server(for: request) else {
            // No RFC 3261 branch: RFC 2543's matching is not served.
            if method != "ACK" { send(.response(to: request, status: 400, reason: "Missing Via Branch"), to: peer) }
            return metrics.messagesDropped.add(1, .malformed)
        }
        // A request in the dialog of a call placed from another loop: that loop's (its transaction there).
        if (try? request.to())?.tag != nil, call(for: request) == nil, trunks.forwarded(request, from: peer) { return }
        // A retransmission, or the ACK of a non-2xx final (section 17.2.3).
        if table.received(request: request, key: key) { return }
        switch method {
        case "ACK":
            // The ACK of a 2xx is its own transaction (section 17.1.1.3): the dialog's.
            call(for: request)?.acknowledged(request)
        case "CANCEL":
            cancel(request, from: peer, key: key)
        default:
            table.begin(request, key: key, from: peer)
        }
    }

    /// A new request, its transaction begun: to its call, or answered here.
    func deliver(_ request: SIPMessage, key: SIPTransactionKey, from peer: SIPPeer, now: UInt64) {
        let method = request.method ?? ""
        // An answered INVITE's transaction hands over an ACK that came on its branch: the dialog's.
        if method == "ACK" { return call(for: request)?.acknowledged(request) ?? () }
        let inDialog = (try? request.to())?.tag != nil
        if inDialog {
            guard let call = call(for: request) else {
                // A BYE in the early dialog of a call Parley placed: 200, and the call ends.
                if method == "BYE", let callID = try? request.callID(), let dial = trunks.ringing[callID] {
                    respond(.response(to: request, status: 200), key: key)
                    return dial.hungUpEarly()
                }
                return respond(.response(to: request, status: 481, toTag: nil), key: key)
            }
            return call.inDialog(request, key: key)
        }
        switch method {
        case "INVITE":
            invite(request, key: key, from: peer, now: now)
        case "OPTIONS" where LoopDrain.on(loop).isDraining:
            // A proxy's probe (Kamailio's dispatcher) takes this node out of its set.
            let refusal = SIPInviteAdmission.Refusal.draining
            var draining = SIPMessage.response(to: request, status: refusal.status, reason: refusal.phrase, toTag: Self.tag())
            draining.headers += refusal.headers
            respond(draining, key: key)
        case "OPTIONS":
            var ok = SIPMessage.response(to: request, status: 200, toTag: Self.tag())
            ok.add("Allow", SIPDialog.allow)
            ok.add("Accept", "application/sdp")
            respond(ok, key: key)
        case "BYE", "UPDATE", "INFO", "PRACK", "NOTIFY":
            respond(.response(to: request, status: 481, toTag: Self.tag()), key: key)
        default:
            var refused = SIPMessage.response(to: request, status: 405, toTag: Self.tag())
            refused.add("Allow", SIPDialog.allow)
            respond(refused, key: key)
        }
    }

    private func invite(_ request: SIPMessage, key: SIPTransactionKey, from peer: SIPPeer, now: UInt64) {
        let verdict = admission.admit(request, from: peer.address, overTLS: peer.transport == "TLS", calls: calls,
                                      now: now, wallSeconds: UInt64(WallClock.seconds()), draining: LoopDrain.on(loop).isDraining)
        switch verdict {
        case .refuse(let refusal):
            refuse(request, refusal, key: key)
        case .accept(let callID, let offer, let crypto):
            let call: SIPCall
            do {
                call = try SIPCall(agent: self, invite: request, key: key, peer: peer, offer: offer, crypto: crypto, arrivedAt: now)
            } catch {
                return refuse(request, .noRTPPort, key: key)
            }
            calls[callID] = call
            call.begin()
        }
    }

    private func refuse(_ request: SIPMessage, _ refusal: SIPInviteAdmission.Refusal, key: SIPTransactionKey) {
        metrics.refused.add(1, refusal.reason)
        var response = SIPMessage.response(to: request, status: refusal.status, reason: refusal.phrase, toTag: Self.tag())
        response.headers += refusal.headers
        respond(response, key: key)
    }

    private func cancel(_ request: SIPMessage, from peer: SIPPeer, key: SIPTransactionKey) {
        guard let inviteKey = SIPTransactionKey.invite(cancelledBy: request), table.serving(inviteKey),
              let callID = try? request.callID(), let call = calls[callID] else {
            send(.response(to: request, status: 481, toTag: nil), to: peer)
            return
        }
        // Section 9.2: the CANCEL is answered 200 (its own transaction); the INVITE, if not yet
        // answered, 487.
        table.begin(request, key: key, from: peer)
        respond(.response(to: request, status: 200), key: key)
        call.cancelled()
    }

    private func call(for request: SIPMessage) -> SIPCall? {
        guard let callID = try? request.callID() else { return nil }
        return calls[callID]
    }

    func forget(_ call: SIPCall) {
        SIPPlacedCalls.shared.remove(call.callID)
        if calls[call.callID] === call { calls[call.callID] = nil }
    }

    /// The TU's answer to the request of transaction `key`.
    func respond(_ response: SIPMessage, key: SIPTransactionKey) { table.respond(response, key: key) }

    // MARK: Requests of ours

    /// Sends `request` (a BYE, a REFER) to `peer` in its own transaction; `done` gets its final
    /// response, or nil when none came (timer F).
    /// `addingVia`: false for a CANCEL, which carries its INVITE's Via (section 9.1).
    func send(request: SIPMessage, to peer: SIPPeer, addingVia: Bool = true, done: @escaping (SIPMessage?) -> Void) {
        let request = addingVia ? settings.stamped(request, over: peer.transport) : request
        let sent = table.send(request: request, to: peer) { response in
            guard let response else { return done(nil) }
            if let status = response.status, status >= 200 { done(response) }
        }
        if !sent { done(nil) }
    }

    private func response(_ response: SIPMessage, from peer: SIPPeer) {
        let key = SIPTransactionKey.client(for: response)
        // A 2xx of our INVITE again, after its transaction ended: acknowledged again.
        if !(key.map(table.sending) ?? false), trunks.answeredAgain(response) { return }
        guard let key, table.received(response: response, key: key) else {
            if trunks.forwarded(response, from: peer) { return }
            // A response to nothing of ours.
            return metrics.messagesDropped.add(1, .unmatched)
        }
    }

    // MARK: Calls Parley places (`SIPDialOut`'s, carried by `trunks`)

    func sendInvite(_ invite: SIPMessage, to peer: SIPPeer, for call: SIPDialOut) { trunks.sendInvite(invite, to: peer, for: call) }
    func cancelInvite(of call: SIPDialOut) { trunks.cancelInvite(of: call) }
    func sendACK(_ ack: SIPMessage, to peer: SIPPeer, callID: String) { trunks.sendACK(ack, to: peer, callID: callID) }
    func dialEnded(_ dial: SIPDialOut) { trunks.ended(dial) }

    /// The placed call was answered: `call` is its `SIPCall` from now on.
    func answered(_ dial: SIPDialOut, by call: SIPCall) {
        trunks.answered(dial)
        calls[call.callID] = call
    }

    /// Whether a call, ringing or answered, is signalled on `connection`.
    func uses(_ connection: StreamConnection) -> Bool {
        calls.values.contains { $0.peer.connection === connection } || trunks.uses(connection)
    }

    /// A TCP or TLS connection ended: the requests of ours waiting on it, and the trunk it led to.
    func streamClosed(_ connection: StreamConnection) {
        table.closed(connection)
        trunks.closed(connection)
    }

    // MARK: Out

    func send(_ message: SIPMessage, to peer: SIPPeer) {
        if let connection = peer.connection {
            connection.send(message.encoded())
        } else {
            port?.send(message.encoded(), to: peer.address)
        }
    }

    /// A fresh tag or branch suffix: 64 random bits in hex.
    static func tag() -> String {
        OpenSSL.randomBytes(8).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// The server is stopping: every call ends with a BYE, every call ringing is cancelled.
    func stopping() {
        registrar?.stopping()
        for call in Array(calls.values) { call.hangUp(.serverBye) }
        trunks.stopping()
    }
}
