import Loop
import Server
import SIP

/// One loop's calls out through trunks, apart from the calls it answers: the connection open to
/// each trunk over TCP or TLS, the calls still ringing (their INVITEs in the agent's transaction
/// table), the ACK of each call answered (for its 2xx again), and what reaches this loop for a call
/// placed from another (`SIPPlacedCalls`), handed to that loop.
final class SIPTrunkCalls {
    private unowned let agent: SIPUserAgent
    /// The TCP port's way out, for trunks over TCP and TLS, and the connection open to each.
    private var dialer: StreamDialer?
    private var connections: [String: StreamConnection] = [:]
    /// Calls Parley placed that are still ringing, by Call-ID.
    private(set) var ringing: [String: SIPDialOut] = [:]
    /// The ACK of each call of ours answered in the last 64*T1, by Call-ID: its 2xx may come
    /// again (RFC 3261 section 13.2.2.4), and is acknowledged again.
    private var acks: [String: (ack: SIPMessage, peer: SIPPeer)] = [:]

    init(agent: SIPUserAgent) { self.agent = agent }

    func attach(_ dialer: StreamDialer) { self.dialer = dialer }

    /// Where a call through `trunk` is signalled (at its address): UDP, or the trunk's TCP or TLS
    /// connection, reused while it is open (section 18.1.1), else opened; nil when none could be
    /// begun.
    func peer(for trunk: SIPOutboundTrunk) -> SIPPeer? {
        let address = trunk.address
        guard trunk.transport != .udp else { return .udp(address) }
        if let open = connections[trunk.name], open.isOpen { return SIPPeer(address: address, connection: open) }
        guard let dialer, let socket = address.socketAddress else { return nil }
        let tls = trunk.transport == .tls ? agent.endpoint.trunkTLS[trunk.name] : nil
        guard let connection = dialer.connect(to: socket, tls: tls, serverName: trunk.host, speak: { [unowned agent] in
            SIPStreamProtocol.dialed($0, peer: address, agent: agent)
        }) else { return nil }
        connections[trunk.name] = connection
        return SIPPeer(address: address, connection: connection)
    }

    /// Whether a call ringing is signalled on `connection`.
    func uses(_ connection: StreamConnection) -> Bool { ringing.values.contains { $0.peer.connection === connection } }

    /// A TCP or TLS connection ended: the next call through its trunk opens another.
    func closed(_ connection: StreamConnection) {
        for (name, open) in connections where open === connection { connections[name] = nil }
    }

    // MARK: A call placed

    /// Places `call`: its INVITE goes out (`SIPDialOut.start`).
    func dial(_ call: SIPDialOut) {
        if call.peer.connection == nil { SIPPlacedCalls.shared.add(call.callID, on: agent) }
        ringing[call.callID] = call
        call.start()
    }

    /// An INVITE of a call being placed, in a client transaction of its own (with a Via of its
    /// own): every response to the call while it rings, or its timeout (timer B, section 17.1.1.2).
    func sendInvite(_ invite: SIPMessage, to peer: SIPPeer, for call: SIPDialOut) {
        let callID = call.callID
        let sent = agent.table.send(request: agent.settings.stamped(invite, over: peer.transport), to: peer, dialing: callID) { [weak self] response in
            if let response { self?.ringing[callID]?.received(response) } else { self?.ringing[callID]?.timedOut() }
        }
        if !sent { call.timedOut() }
    }

    /// CANCEL of the call's INVITE in flight (section 9.1): the INVITE as sent, Via and all.
    func cancelInvite(of call: SIPDialOut) {
        guard let (invite, peer) = agent.table.invite(of: call.callID) else { return }
        agent.send(request: SIPMessage.cancel(for: invite), to: peer, addingVia: false) { _ in }
    }

    /// The ACK of a 2xx (its own Via), kept for the 2xx's retransmissions.
    func sendACK(_ ack: SIPMessage, to peer: SIPPeer, callID: String) {
        let ack = agent.settings.stamped(ack, over: peer.transport)
        agent.send(ack, to: peer)
        acks[callID] = (ack, peer)
        _ = agent.loop.schedule(after: Double(SIPTimers().transactionTimeout) / 1e9) { [weak self] in self?.acks[callID] = nil }
    }

    /// The placed call was answered: a `SIPCall` holds it from now on.
    func answered(_ dial: SIPDialOut) { ringing[dial.callID] = nil }

    /// The placed call ended before it was answered.
    func ended(_ dial: SIPDialOut) {
        SIPPlacedCalls.shared.remove(dial.callID)
        if ringing[dial.callID] === dial { ringing[dial.callID] = nil }
    }

    /// A 2xx of our INVITE after its transaction ended (section 13.2.2.4): to the call if it
    /// still rings, else acknowledged again; false when it is for no call of ours.
    func answeredAgain(_ response: SIPMessage) -> Bool {
        guard let status = response.status, (200..<300).contains(status), (try? response.cseq().method) == "INVITE",
              let callID = try? response.callID() else { return false }
        if let dial = ringing[callID] {
            dial.received(response)
            return true
        }
        guard let (ack, peer) = acks[callID] else { return false }
        agent.send(ack, to: peer)
        return true
    }

    /// A message for a call placed over UDP from another loop (`SIPPlacedCalls`), handed to it;
    /// false when the call is not one of those.
    func forwarded(_ message: SIPMessage, from peer: SIPPeer) -> Bool {
        guard peer.connection == nil, let callID = try? message.callID(), ringing[callID] == nil, agent.calls[callID] == nil,
              let home = SIPPlacedCalls.shared.home(of: callID), home.value !== agent else { return false }
        let address = peer.address
        home.value.loop.handle.execute { home.value.received(message, from: .udp(address)) }
        return true
    }

    /// The server is stopping: every call ringing is cancelled.
    func stopping() {
        for call in Array(ringing.values) { call.control(.hangUp) }
    }
}
