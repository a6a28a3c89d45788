import Loop
import Media
import Server
import Session
import SIP
import TLS

/// One loop's SIP user agent (RFC 3261), over its share of the SIP port (`SIPSignallingPort`): a
/// datagram in is parsed and matched to a transaction (section 17.2.3) or a dialog (section 12.2),
/// and what is new goes to its handler: an INVITE makes a `SIPCall`; in-dialog requests go to
/// theirs; OPTIONS is answered here; anything else is refused as RFC 3261 says. Responses to the
/// requests our calls send (BYE, REFER) go back to those calls.
///
/// The transactions are `SIP`'s value machines; this class runs their timers on the loop and
/// carries out their actions. Every message we send goes back to the address the request came
/// from (RFC 3581's symmetric response routing, which every NATed phone relies on).
final class SIPUserAgent {
    let loop: EventLoop
    let endpoint: SIPEndpoint
    private unowned(unsafe) var port: SIPSignallingPort!
    private var server: [SIPTransactionKey: ServerTransaction] = [:]
    private var client: [SIPTransactionKey: ClientTransaction] = [:]
    /// Calls by Call-ID (and, once answered, our tag: a dialog, section 12).
    private(set) var calls: [String: SIPCall] = [:]
    /// Calls Parley placed that are still ringing, by Call-ID (their INVITEs are in `client`).
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
    /// Who may call, and the loop's INVITEs a second.
    private var admission: SIPInviteAdmission

    private struct ServerTransaction {
        enum Machine {
            case invite(SIPServerInviteTransaction)
            case other(SIPServerNonInviteTransaction)
        }
        var machine: Machine
        let peer: SIPPeer
        var timer: ScheduledTask?
    }

    /// A request of ours in its transaction: a call's BYE or REFER (its final response to `done`),
    /// or a placed call's INVITE (every response to the call, `dialing[callID]`).
    private struct ClientTransaction {
        enum Machine {
            case invite(SIPClientInviteTransaction, callID: String)
            case other(SIPClientNonInviteTransaction, done: (SIPMessage?) -> Void)
        }
        var machine: Machine
        let peer: SIPPeer
        var timer: ScheduledTask?

        mutating func receive(_ response: SIPMessage, now: UInt64) -> [SIPTransactionAction] {
            switch machine {
            case .invite(var invite, let callID):
                defer { machine = .invite(invite, callID: callID) }
                return invite.receive(response: response, now: now)
            case .other(var other, let done):
                defer { machine = .other(other, done: done) }
                return other.receive(response: response, now: now)
            }
        }

        mutating func fire(now: UInt64) -> [SIPTransactionAction] {
            switch machine {
            case .invite(var invite, let callID):
                defer { machine = .invite(invite, callID: callID) }
                return invite.fire(now: now)
            case .other(var other, let done):
                defer { machine = .other(other, done: done) }
                return other.fire(now: now)
            }
        }

        var nextDeadline: UInt64? {
            switch machine {
            case .invite(let invite, _): invite.nextDeadline
            case .other(let other, _): other.nextDeadline
            }
        }
    }

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
        if var existing = server[key] {
            // A retransmission, or the ACK of a non-2xx final (section 17.2.3).
            let now = loop.nanoseconds()
            let actions: [SIPTransactionAction]
            switch existing.machine {
            case .invite(var machine):
                actions = machine.receive(request: request, now: now)
                existing.machine = .invite(machine)
            case .other(var machine):
                actions = machine.receive(request: request, now: now)
                existing.machine = .other(machine)
            }
            server[key] = existing
            return carry(actions, key: key)
        }
        switch method {
        case "ACK":
            // The ACK of a 2xx is its own transaction (section 17.1.1.3): the dialog's.
            call(for: request)?.acknowledged(request)
        case "CANCEL":
            cancel(request, from: peer, key: key)
        default:
            begin(request, key: key, from: peer)
        }
    }

    private func begin(_ request: SIPMessage, key: SIPTransactionKey, from peer: SIPPeer) {
        let method = request.method ?? ""
        let now = loop.nanoseconds()
        if method == "INVITE" {
            var machine = SIPServerInviteTransaction(request: request, reliable: peer.isReliable)
            let actions = machine.start()
            server[key] = ServerTransaction(machine: .invite(machine), peer: peer)
            return carry(actions, key: key)
        }
        var machine = SIPServerNonInviteTransaction(request: request, reliable: peer.isReliable)
        _ = machine.start()
        server[key] = ServerTransaction(machine: .other(machine), peer: peer)
        deliver(request, key: key, from: peer, now: now)
    }

    /// A new request, its transaction begun: to its call, or answered here.
    private func deliver(_ request: SIPMessage, key: SIPTransactionKey, from peer: SIPPeer, now: UInt64) {
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
        guard let inviteKey = SIPTransactionKey.invite(cancelledBy: request), server[inviteKey] != nil,
              let callID = try? request.callID(), let call = calls[callID] else {
            send(.response(to: request, status: 481, toTag: nil), to: peer)
            return
        }
        // Section 9.2: the CANCEL is answered 200 (its own transaction); the INVITE, if not yet
        // answered, 487.
        begin(request, key: key, from: peer)
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

    // MARK: Server transactions

    /// The TU's answer to the request of transaction `key`.
    func respond(_ response: SIPMessage, key: SIPTransactionKey) {
        guard var existing = server[key] else { return }
        let now = loop.nanoseconds()
        let actions: [SIPTransactionAction]
        switch existing.machine {
        case .invite(var machine):
            actions = machine.respond(response, now: now)
            existing.machine = .invite(machine)
        case .other(var machine):
            actions = machine.respond(response, now: now)
            existing.machine = .other(machine)
        }
        server[key] = existing
        carry(actions, key: key)
    }

    private func carry(_ actions: [SIPTransactionAction], key: SIPTransactionKey) {
        guard let peer = server[key]?.peer else { return }
        let now = loop.nanoseconds()
        for action in actions {
            switch action {
            case .send(let message): send(message, to: peer)
            case .deliver(let request): deliver(request, key: key, from: peer, now: now)
            case .timeout:
                // No ACK for a final non-2xx: nothing more to do for a call that was refused.
                break
            case .terminated:
                server[key]?.timer?.cancel()
                server[key] = nil
                return
            }
        }
        schedule(server: key)
    }

    private func schedule(server key: SIPTransactionKey) {
        guard var existing = server[key] else { return }
        existing.timer?.cancel()
        let deadline: UInt64? = switch existing.machine {
        case .invite(let machine): machine.nextDeadline
        case .other(let machine): machine.nextDeadline
        }
        existing.timer = deadline.map { at in
            let now = loop.nanoseconds()
            return loop.schedule(after: Double(at > now ? at - now : 0) / 1e9) { [weak self] in self?.fire(server: key) }
        }
        server[key] = existing
    }

    private func fire(server key: SIPTransactionKey) {
        guard var existing = server[key] else { return }
        let now = loop.nanoseconds()
        let actions: [SIPTransactionAction]
        switch existing.machine {
        case .invite(var machine):
            actions = machine.fire(now: now)
            existing.machine = .invite(machine)
        case .other(var machine):
            actions = machine.fire(now: now)
            existing.machine = .other(machine)
        }
        existing.timer = nil
        server[key] = existing
        carry(actions, key: key)
    }

    // MARK: Client transactions (the requests our calls send)

    /// Sends `request` (a BYE, a REFER) to `peer` in its own transaction; `done` gets its final
    /// response, or nil when none came (timer F).
    /// `addingVia`: false for a CANCEL, which carries its INVITE's Via (section 9.1).
    func send(request: SIPMessage, to peer: SIPPeer, addingVia: Bool = true, done: @escaping (SIPMessage?) -> Void) {
        // Section 8.1.1.7: the Via, with a branch of this transaction's own.
        var request = request
        if addingVia {
            request.headers.insert(SIPHeader("Via", settings.via(over: peer.transport, branch: SIPVia.branch(random: OpenSSL.randomBytes(8)))), at: 0)
        }
        guard let key = SIPTransactionKey.client(for: request) else { return done(nil) }
        var machine = SIPClientNonInviteTransaction(request: request, reliable: peer.isReliable)
        let actions = machine.start(now: loop.nanoseconds())
        client[key] = ClientTransaction(machine: .other(machine, done: done), peer: peer)
        carryClient(actions, key: key)
    }

    private func response(_ response: SIPMessage, from peer: SIPPeer) {
        let key = SIPTransactionKey.client(for: response)
        if key.map({ client[$0] == nil }) ?? true, let status = response.status, (200..<300).contains(status), (try? response.cseq().method) == "INVITE", let callID = try? response.callID() {
            // A 2xx of our INVITE again, after its transaction ended: acknowledged again.
            if let dial = dialing[callID] { return dial.received(response) }
            if let (ack, peer) = acks[callID] { return send(ack, to: peer) }
        }
        guard let key, var existing = client[key] else {
            if forwarded(response, from: peer) { return }
            // A response to nothing of ours.
            return metrics.messagesDropped.add(1, .unmatched)
        }
        let actions = existing.receive(response, now: loop.nanoseconds())
        client[key] = existing
        carryClient(actions, key: key)
    }

    private func carryClient(_ actions: [SIPTransactionAction], key: SIPTransactionKey) {
        guard let existing = client[key] else { return }
        for action in actions {
            switch (action, existing.machine) {
            case (.send(let message), _): send(message, to: existing.peer)
            case (.deliver(let response), .invite(_, let callID)): dialing[callID]?.received(response)
            case (.deliver(let response), .other(_, let done)):
                if let status = response.status, status >= 200 { done(response) }
            case (.timeout, .invite(_, let callID)): dialing[callID]?.timedOut()
            case (.timeout, .other(_, let done)): done(nil)
            case (.terminated, _):
                client[key]?.timer?.cancel()
                client[key] = nil
                return
            }
        }
        guard var current = client[key] else { return }
        current.timer?.cancel()
        current.timer = current.nextDeadline.map { at in loop.schedule(at: at) { [weak self] in self?.fire(client: key) } }
        client[key] = current
    }

    private func fire(client key: SIPTransactionKey) {
        guard var existing = client[key] else { return }
        let actions = existing.fire(now: loop.nanoseconds())
        existing.timer = nil
        client[key] = existing
        carryClient(actions, key: key)
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

    /// A TCP or TLS connection ended: a request of ours waiting on it will get no response there
    /// (a connect refused, a handshake failed, the peer gone), so its transaction ends now.
    func streamClosed(_ connection: StreamConnection) {
        for (key, pending) in client where pending.peer.connection === connection {
            carryClient([.timeout, .terminated], key: key)
        }
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

    /// An INVITE of a call being placed, in a client transaction of its own (with a Via of its own).
    func sendInvite(_ invite: SIPMessage, to peer: SIPPeer, for call: SIPDialOut) {
        var invite = invite
        invite.headers.insert(SIPHeader("Via", settings.via(over: peer.transport, branch: SIPVia.branch(random: OpenSSL.randomBytes(8)))), at: 0)
        guard let key = SIPTransactionKey.client(for: invite) else { return call.timedOut() }
        var machine = SIPClientInviteTransaction(request: invite, reliable: peer.isReliable)
        let actions = machine.start(now: loop.nanoseconds())
        client[key] = ClientTransaction(machine: .invite(machine, callID: call.callID), peer: peer)
        carryClient(actions, key: key)
    }

    /// CANCEL of the call's INVITE in flight (section 9.1): the INVITE as sent, Via and all.
    func cancelInvite(of call: SIPDialOut) {
        for pending in client.values {
            guard case .invite(let invite, let callID) = pending.machine, callID == call.callID, invite.state != .terminated else { continue }
            return send(request: SIPMessage.cancel(for: invite.request), to: pending.peer, addingVia: false) { _ in }
        }
    }

    /// The ACK of a 2xx (its own Via), kept for the 2xx's retransmissions.
    func sendACK(_ ack: SIPMessage, to peer: SIPPeer, callID: String) {
        var ack = ack
        ack.headers.insert(SIPHeader("Via", settings.via(over: peer.transport, branch: SIPVia.branch(random: OpenSSL.randomBytes(8)))), at: 0)
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
