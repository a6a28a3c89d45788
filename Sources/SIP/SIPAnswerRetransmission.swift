/// The UAS core's resends of its 2xx to an INVITE (RFC 3261 section 13.3.1.4): the INVITE's server
/// transaction ends with the 2xx, so the core itself sends it again, at T1 doubling to T2, until
/// the ACK comes, and gives up 64*T1 after the first (the dialog then ends with a BYE). A value:
/// the caller sends the 2xx, waits `firstWait`, and calls `fired()` each time its timer goes off.
package struct SIPAnswerRetransmission: Sendable, Equatable {
    package enum Step: Sendable, Equatable {
        /// Send the 2xx again; the timer goes off next after this many nanoseconds.
        case resend(nextAfter: UInt64)
        /// 64*T1 have passed without an ACK.
        case giveUp
    }

    private let timers: SIPTimers
    private var interval: UInt64
    /// The time since the 2xx first went out at which the timer goes off next.
    private var given: UInt64

    package init(timers: SIPTimers = SIPTimers()) {
        self.timers = timers
        interval = timers.t1
        given = timers.t1
    }

    /// From the first 2xx to the first resend: T1.
    package var firstWait: UInt64 { timers.t1 }

    /// The timer went off.
    package mutating func fired() -> Step {
        guard given < timers.transactionTimeout else { return .giveUp }
        interval = min(interval &* 2, timers.t2)
        // The last wait ends at 64*T1 itself, not at the resend past it (32 s, not 35.5).
        let wait = min(interval, timers.transactionTimeout - given)
        given += wait
        return .resend(nextAfter: wait)
    }
}
