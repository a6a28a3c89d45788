/// The INVITE client transaction (RFC 3261 section 17.1.1, figure 5): Calling, the INVITE resent
/// on timer A over UDP (doubling, with no T2 cap) until a response or timer B; Proceeding after a
/// provisional; a 2xx goes to the TU and ends it (the TU sends that ACK, section 13.2.2.4); a
/// 300-699 is ACKed here, goes to the TU, and its retransmissions are ACKed again until timer D.
package struct SIPClientInviteTransaction: Sendable {
    package enum State: Sendable, Equatable { case calling, proceeding, completed, terminated }

    package private(set) var state = State.calling
    package let request: SIPMessage
    package let reliable: Bool
    package let timers: SIPTimers
    private var timerA: SIPRetransmitTimer?
    private var timerB: UInt64?
    private var timerD: UInt64?
    private var ack: SIPMessage?

    package init(request: SIPMessage, reliable: Bool, timers: SIPTimers = SIPTimers()) {
        self.request = request
        self.reliable = reliable
        self.timers = timers
    }

    package mutating func start(now: UInt64) -> [SIPTransactionAction] {
        if !reliable { timerA = SIPRetransmitTimer(at: now &+ timers.t1, interval: timers.t1) }
        timerB = now &+ timers.transactionTimeout
        return [.send(request)]
    }

    package mutating func receive(response: SIPMessage, now: UInt64) -> [SIPTransactionAction] {
        guard let status = response.status else { return [] }
        switch state {
        case .calling, .proceeding:
            if status < 200 {
                state = .proceeding
                timerA = nil
                return [.deliver(response)]
            }
            timerA = nil
            timerB = nil
            if status < 300 {
                state = .terminated
                return [.deliver(response), .terminated]
            }
            let ack = SIPMessage.ack(for: request, response: response)
            self.ack = ack
            if reliable {
                state = .terminated
                return [.send(ack), .deliver(response), .terminated]
            }
            state = .completed
            timerD = now &+ SIPTimers.timerD
            return [.send(ack), .deliver(response)]
        case .completed:
            guard status >= 300, let ack else { return [] }
            return [.send(ack)]
        case .terminated:
            return []
        }
    }

    package mutating func fire(now: UInt64) -> [SIPTransactionAction] {
        switch state {
        case .calling:
            if let b = timerB, b <= now {
                state = .terminated
                timerA = nil
                return [.timeout, .terminated]
            }
            guard let a = timerA, a.at <= now else { return [] }
            let interval = a.interval &* 2
            timerA = SIPRetransmitTimer(at: now &+ interval, interval: interval)
            return [.send(request)]
        case .completed:
            guard let d = timerD, d <= now else { return [] }
            state = .terminated
            timerD = nil
            return [.terminated]
        case .proceeding, .terminated:
            return []
        }
    }

    package var nextDeadline: UInt64? {
        switch state {
        case .calling: [timerA?.at, timerB].compactMap { $0 }.min()
        case .completed: timerD
        case .proceeding, .terminated: nil
        }
    }
}

extension SIPMessage {
    /// The ACK for a non-2xx final response to `invite` (section 17.1.1.3): the INVITE's
    /// Request-URI, Call-ID, From, top Via and Route set, the response's To (with its tag), CSeq
    /// with the INVITE's number and ACK.
    package static func ack(for invite: SIPMessage, response: SIPMessage) -> SIPMessage {
        let uri = invite.requestURI ?? SIPURI(host: "invalid")
        var ack = SIPMessage(.request(method: "ACK", uri: uri))
        if let via = invite.value("Via") { ack.headers.append(SIPHeader("Via", via)) }
        ack.headers.append(SIPHeader("Max-Forwards", "70"))
        for name in ["From", "Call-ID"] { if let value = invite.value(name) { ack.headers.append(SIPHeader(name, value)) } }
        if let to = response.value("To") { ack.headers.append(SIPHeader("To", to)) }
        if let cseq = try? invite.cseq() { ack.headers.append(SIPHeader("CSeq", SIPCSeq(cseq.number, "ACK").description)) }
        for route in invite.values("Route") { ack.headers.append(SIPHeader("Route", route)) }
        return ack
    }

    /// The CANCEL of `invite` as it was sent (RFC 3261 section 9.1): its Request-URI, Call-ID,
    /// To, From and Route, its one top Via (so the CANCEL matches its transaction), and its CSeq
    /// number with CANCEL.
    package static func cancel(for invite: SIPMessage) -> SIPMessage {
        var cancel = SIPMessage(.request(method: "CANCEL", uri: invite.requestURI ?? SIPURI(host: "invalid")))
        if let via = invite.value("Via") { cancel.add("Via", via) }
        cancel.add("Max-Forwards", "70")
        for name in ["From", "To", "Call-ID"] { if let value = invite.value(name) { cancel.add(name, value) } }
        if let cseq = try? invite.cseq() { cancel.add("CSeq", SIPCSeq(cseq.number, "CANCEL").description) }
        for route in invite.values("Route") { cancel.add("Route", route) }
        return cancel
    }
}
