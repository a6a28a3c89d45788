/// The non-INVITE client transaction (RFC 3261 section 17.1.2, figure 6), for the BYE, REFER,
/// OPTIONS and NOTIFY Parley sends: the request resent on timer E over UDP (doubling to T2, then
/// every T2 once a provisional response came), given up on timer F; a final response goes to the
/// TU, and retransmissions of it are absorbed until timer K.
package struct SIPClientNonInviteTransaction: Sendable {
    package enum State: Sendable, Equatable { case trying, proceeding, completed, terminated }

    package private(set) var state = State.trying
    package let request: SIPMessage
    package let reliable: Bool
    package let timers: SIPTimers
    private var timerE: SIPRetransmitTimer?
    private var timerF: UInt64?
    private var timerK: UInt64?

    package init(request: SIPMessage, reliable: Bool, timers: SIPTimers = SIPTimers()) {
        self.request = request
        self.reliable = reliable
        self.timers = timers
    }

    /// The transaction begins: the request goes out.
    package mutating func start(now: UInt64) -> [SIPTransactionAction] {
        if !reliable { timerE = SIPRetransmitTimer(at: now &+ timers.t1, interval: timers.t1) }
        timerF = now &+ timers.transactionTimeout
        return [.send(request)]
    }

    /// A response matched to this transaction.
    package mutating func receive(response: SIPMessage, now: UInt64) -> [SIPTransactionAction] {
        guard state == .trying || state == .proceeding, let status = response.status else { return [] }
        if status < 200 {
            state = .proceeding
            return [.deliver(response)]
        }
        timerE = nil
        timerF = nil
        if reliable {
            state = .terminated
            return [.deliver(response), .terminated]
        }
        state = .completed
        timerK = now &+ timers.t4
        return [.deliver(response)]
    }

    package mutating func fire(now: UInt64) -> [SIPTransactionAction] {
        switch state {
        case .trying, .proceeding:
            if let f = timerF, f <= now {
                state = .terminated
                timerE = nil
                return [.timeout, .terminated]
            }
            guard let e = timerE, e.at <= now else { return [] }
            let interval = state == .proceeding ? timers.t2 : min(e.interval &* 2, timers.t2)
            timerE = SIPRetransmitTimer(at: now &+ interval, interval: interval)
            return [.send(request)]
        case .completed:
            guard let k = timerK, k <= now else { return [] }
            state = .terminated
            timerK = nil
            return [.terminated]
        case .terminated:
            return []
        }
    }

    package var nextDeadline: UInt64? {
        switch state {
        case .trying, .proceeding: [timerE?.at, timerF].compactMap { $0 }.min()
        case .completed: timerK
        case .terminated: nil
        }
    }
}
