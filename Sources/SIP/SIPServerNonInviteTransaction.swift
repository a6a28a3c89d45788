/// The non-INVITE server transaction (RFC 3261 section 17.2.2, figure 8): Trying until the TU
/// answers, Proceeding after a provisional response, Completed after a final one, which is resent
/// for each retransmitted request until timer J (64*T1 over UDP, zero over TCP).
package struct SIPServerNonInviteTransaction: Sendable {
    package enum State: Sendable, Equatable { case trying, proceeding, completed, terminated }

    package private(set) var state = State.trying
    package let request: SIPMessage
    package let reliable: Bool
    package let timers: SIPTimers
    package private(set) var lastResponse: SIPMessage?
    private var timerJ: UInt64?

    package init(request: SIPMessage, reliable: Bool, timers: SIPTimers = SIPTimers()) {
        self.request = request
        self.reliable = reliable
        self.timers = timers
    }

    /// The transaction begins: the request to the TU.
    package mutating func start() -> [SIPTransactionAction] { [.deliver(request)] }

    /// The request again.
    package mutating func receive(request _: SIPMessage, now _: UInt64) -> [SIPTransactionAction] {
        switch state {
        case .proceeding, .completed: lastResponse.map { [.send($0)] } ?? []
        case .trying, .terminated: []
        }
    }

    /// A response from the TU.
    package mutating func respond(_ response: SIPMessage, now: UInt64) -> [SIPTransactionAction] {
        guard state == .trying || state == .proceeding, let status = response.status else { return [] }
        lastResponse = response
        if status < 200 {
            state = .proceeding
            return [.send(response)]
        }
        if reliable {
            state = .terminated
            return [.send(response), .terminated]
        }
        state = .completed
        timerJ = now &+ timers.transactionTimeout
        return [.send(response)]
    }

    package mutating func fire(now: UInt64) -> [SIPTransactionAction] {
        guard state == .completed, let j = timerJ, j <= now else { return [] }
        state = .terminated
        timerJ = nil
        return [.terminated]
    }

    package var nextDeadline: UInt64? { state == .completed ? timerJ : nil }
}
