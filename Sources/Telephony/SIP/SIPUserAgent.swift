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
/// The transactions are `SIP`'s value machines in `SIPTransactionTable`, on the loop; who may call
/// is `SIPInviteAdmission`, a value. Every message we send goes back to the address the request
/// came from (RFC 3581's symmetric response routing, which every NATed phone relies on).
final class SIPUserAgent: SIPTransactionUser {
    let loop: EventLoop
    let endpoint: SIPEndpoint
    private unowned(unsafe) var port: SIPSignallingPort!
    private(set) lazy var table = SIPTransactionTable(loop: loop, user: self)
    /// Calls by Call-ID (and, once answered, our tag: a dialog, section 12).
    private(set) var calls: [String: SIPCall] = [:]
    private var admission: SIPInviteAdmission
    /// Calls Parley placed that are still ringing, by Call-ID (their INVITEs are in `table`).
    private var dialing: [String: SIPDialOut] = [:]
    /// The ACK of each call of ours answered in the last 64*T1, by Call-ID: its 2xx may come
    /// again (section 13.2.2.4), and is acknowledged again.
    private var acks: [String: (ack: SIPMessage, peer: SIPPeer)] = [:]
    /// The TCP port's way out, for trunks over TCP and TLS, and the connection open to each.
    private var dialer: StreamDialer?
    private var trunkConnections: [String: StreamConnection] = [:]
    /// The registrations with trunks, on the loop that holds them.
    var registrar: SIPTrunkRegistrar?
    let playout: PlayoutClock
    var metrics: SIPMetrics { .shared }

    init(loop: EventLoop, endpoint: SIPEndpoint, playout: PlayoutClock) {
        self.loop = loop
        self.endpoint = endpoint
        self.playout = playout
        admission = SIPInviteAdmission(settings: endpoint.settings, authenticator: endpoint.authenticator)
    }

    func attach(_ port: SIPSignallingPort) { self.port = port }
    func attach(_ dialer: StreamDialer) { self.dialer = dialer }

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
        if (try? request.to())?.tag != nil, call(for: request) == nil, forwarded(request, from: peer) { return }
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
                if method == "BYE", let callID = try? request.callID(), let dial = dialing[callID] {
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
                                      now: now, wallSeconds: UInt64(WallClock.seconds()))
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
        if !(key.map(table.sending) ?? false), let status = response.status, (200..<300).contains(status), (try? response.cseq().method) == "INVITE", let callID = try? response.callID() {
            // A 2xx of our INVITE again, after its transaction ended: acknowledged again.
            if let dial = dialing[callID] { return dial.received(response) }
            if let (ack, peer) = acks[callID] { return send(ack, to: peer) }
        }
        guard let key, table.received(response: response, key: key) else {
            if forwarded(response, from: peer) { return }
            // A response to nothing of ours.
            return metrics.messagesDropped.add(1, .unmatched)
        }
    }

    // MARK: Calls Parley places

    /// Where a call through `trunk` is signalled (at its address): UDP, or the trunk's TCP or TLS
    /// connection, reused while it is open (RFC 3261 section 18.1.1), else opened; nil when none
    /// could be begun.
    func peer(for trunk: SIPOutboundTrunk) -> SIPPeer? {
        let address = trunk.address
        guard trunk.transport != .udp else { return .udp(address) }
        if let open = trunkConnections[trunk.name], open.isOpen { return SIPPeer(address: address, connection: open) }
        guard let dialer, let socket = address.socketAddress else { return nil }
        let tls = trunk.transport == .tls ? endpoint.trunkTLS[trunk.name] : nil
        guard let connection = dialer.connect(to: socket, tls: tls, serverName: trunk.host, speak: { [unowned self] in
            SIPStreamProtocol.dialed($0, peer: address, agent: self)
        }) else { return nil }
        trunkConnections[trunk.name] = connection
        return SIPPeer(address: address, connection: connection)
    }

    /// Whether a call, ringing or answered, is signalled on `connection`.
    func uses(_ connection: StreamConnection) -> Bool {
        calls.values.contains { $0.peer.connection === connection } || dialing.values.contains { $0.peer.connection === connection }
    }

    /// A TCP or TLS connection ended: the requests of ours waiting on it, and the trunk it led to.
    func streamClosed(_ connection: StreamConnection) {
        table.closed(connection)
        for (name, open) in trunkConnections where open === connection { trunkConnections[name] = nil }
    }

    /// A message for a call placed over UDP from another loop (`SIPPlacedCalls`), handed to it;
    /// false when the call is not one of those.
    private func forwarded(_ message: SIPMessage, from peer: SIPPeer) -> Bool {
        guard peer.connection == nil, let callID = try? message.callID(), dialing[callID] == nil, calls[callID] == nil,
              let home = SIPPlacedCalls.shared.home(of: callID), home.value !== self else { return false }
        let address = peer.address
        home.value.loop.handle.execute { home.value.received(message, from: .udp(address)) }
        return true
    }

    /// Places `call`: its INVITE goes out (`SIPDialOut.start`).
    func dial(_ call: SIPDialOut) {
        if call.peer.connection == nil { SIPPlacedCalls.shared.add(call.callID, on: self) }
        dialing[call.callID] = call
        call.start()
    }

    /// An INVITE of a call being placed, in a client transaction of its own (with a Via of its own):
    /// every response to the call while it rings, or its timeout (timer B, section 17.1.1.2).
    func sendInvite(_ invite: SIPMessage, to peer: SIPPeer, for call: SIPDialOut) {
        let callID = call.callID
        let sent = table.send(request: settings.stamped(invite, over: peer.transport), to: peer, dialing: callID) { [weak self] response in
            if let response { self?.dialing[callID]?.received(response) } else { self?.dialing[callID]?.timedOut() }
        }
        if !sent { call.timedOut() }
    }

    /// CANCEL of the call's INVITE in flight (section 9.1): the INVITE as sent, Via and all.
    func cancelInvite(of call: SIPDialOut) {
        guard let (invite, peer) = table.invite(of: call.callID) else { return }
        send(request: SIPMessage.cancel(for: invite), to: peer, addingVia: false) { _ in }
    }

    /// The ACK of a 2xx (its own Via), kept for the 2xx's retransmissions.
    func sendACK(_ ack: SIPMessage, to peer: SIPPeer, callID: String) {
        let ack = settings.stamped(ack, over: peer.transport)
        send(ack, to: peer)
        acks[callID] = (ack, peer)
        _ = loop.schedule(after: Double(SIPTimers().transactionTimeout) / 1e9) { [weak self] in self?.acks[callID] = nil }
    }

    /// The placed call was answered: `call` is its `SIPCall` from now on.
    func answered(_ dial: SIPDialOut, by call: SIPCall) {
        dialing[dial.callID] = nil
        calls[call.callID] = call
    }

    /// The placed call ended before it was answered.
    func dialEnded(_ dial: SIPDialOut) {
        SIPPlacedCalls.shared.remove(dial.callID)
        if dialing[dial.callID] === dial { dialing[dial.callID] = nil }
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
        for call in Array(dialing.values) { call.control(.hangUp) }
    }
}
