/// The INVITE server transaction (RFC 3261 section 17.2.1, figure 7, with RFC 6026's Accepted
/// state): Proceeding until the transaction user answers; a 2xx moves it to Accepted until timer
/// L (64*T1), where the INVITE sent again is answered with the same 2xx (the TU retransmits an
/// initial INVITE's 2xx until the ACK too, section 13.3.1.4) instead of reaching the TU as a new
/// request, and an ACK sent on the INVITE's branch goes to the TU; a 300-699 is retransmitted on
/// timer G over UDP until the ACK (Confirmed), given up on timer H; Confirmed absorbs further ACKs
/// until timer I.
package struct SIPServerInviteTransaction: Sendable {
    package enum State: Sendable, Equatable { case proceeding, accepted, completed, confirmed, terminated }

    package private(set) var state = State.proceeding
    package let request: SIPMessage
    package let reliable: Bool
    package let timers: SIPTimers
    /// The last response sent: resent when the INVITE is retransmitted.
    package private(set) var lastResponse: SIPMessage?
    private var timerG: SIPRetransmitTimer?
    private var timerH: UInt64?
    private var timerI: UInt64?
    private var timerL: UInt64?

    /// `reliable`: TCP or TLS, where nothing is retransmitted and timer I is zero.
    package init(request: SIPMessage, reliable: Bool, timers: SIPTimers = SIPTimers()) {
        self.request = request
        self.reliable = reliable
        self.timers = timers
    }

    /// The transaction begins: a 100 Trying at once (section 17.2.1 lets it wait 200 ms for the
    /// TU's own, which saves nothing worth the timer), and the INVITE to the TU.
    package mutating func start() -> [SIPTransactionAction] {
        var trying = SIPMessage.response(to: request, status: 100)
        for timestamp in request.values("Timestamp") { trying.add("Timestamp", timestamp) }  // section 8.2.6.1
        lastResponse = trying
        return [.send(trying), .deliver(request)]
    }

    /// A request matched to this transaction: the INVITE again, or the ACK of a non-2xx final.
    package mutating func receive(request incoming: SIPMessage, now: UInt64) -> [SIPTransactionAction] {
        if incoming.method == "ACK" {
            // The ACK of a 2xx is a transaction of its own; one sent on the INVITE's branch is
            // still the dialog's (RFC 6026 section 8.7).
            if state == .accepted { return [.deliver(incoming)] }
            guard state == .completed else { return [] }
            state = .confirmed
            timerG = nil
            timerH = nil
            if reliable {
                state = .terminated
                return [.terminated]
            }
            timerI = now &+ timers.t4
            return []
        }
        switch state {
        case .proceeding, .accepted, .completed: return lastResponse.map { [.send($0)] } ?? []
        case .confirmed, .terminated: return []
        }
    }

    /// A response from the TU.
    package mutating func respond(_ response: SIPMessage, now: UInt64) -> [SIPTransactionAction] {
        guard state == .proceeding, let status = response.status else { return [] }
        lastResponse = response
        switch status {
        case 100..<200:
            return [.send(response)]
        case 200..<300:
            state = .accepted
            timerL = now &+ timers.transactionTimeout
            return [.send(response)]
        default:
            state = .completed
            if !reliable { timerG = SIPRetransmitTimer(at: now &+ timers.t1, interval: timers.t1) }
            timerH = now &+ timers.transactionTimeout
            return [.send(response)]
        }
    }

    /// Runs the timers due by `now`.
    package mutating func fire(now: UInt64) -> [SIPTransactionAction] {
        var actions: [SIPTransactionAction] = []
        if state == .accepted, let l = timerL, l <= now {
            state = .terminated
            timerL = nil
            return [.terminated]
        }
        if state == .completed, let h = timerH, h <= now {
            state = .terminated
            timerG = nil
            return [.timeout, .terminated]
        }
        if state == .completed, let g = timerG, g.at <= now, let response = lastResponse {
            let interval = min(g.interval &* 2, timers.t2)
            timerG = SIPRetransmitTimer(at: now &+ interval, interval: interval)
            actions.append(.send(response))
        }
        if state == .confirmed, let i = timerI, i <= now {
            state = .terminated
            timerI = nil
            actions.append(.terminated)
        }
        return actions
    }

    /// When `fire(now:)` next has something to do; nil when nothing is pending.
    package var nextDeadline: UInt64? {
        switch state {
        case .accepted: timerL
        case .completed: [timerG?.at, timerH].compactMap { $0 }.min()
        case .confirmed: timerI
        case .proceeding, .terminated: nil
        }
    }
}
