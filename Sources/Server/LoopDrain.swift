import Loop

/// What holds calls on a loop (SIP's user agent, WebRTC's calls), as a drain sees it (issue 73): a
/// draining loop does not stop while a holder has calls, up to the drain's bound (`--drain-seconds`),
/// and at the bound each holder ends its calls itself (a SIP call with its BYE).
package protocol DrainHolder: AnyObject {
    /// Calls held now (ringing, answered, or placed and not yet answered).
    var callsHeld: Int { get }
    /// The drain's bound passed: end every call now, as the carrier ends one (a BYE, a CANCEL).
    func endCallsForDrain()
}

/// A loop's drain as its call holders see it: whether the server drains (new calls are refused:
/// SIP's 503 with Retry-After), and the holders the loop waits for before it stops.
package final class LoopDrain {
    package private(set) var isDraining = false
    private var holders: [Weak] = []

    private struct Weak {
        weak var holder: (any DrainHolder)?
    }

    private init() {}

    package static func on(_ loop: EventLoop) -> LoopDrain { loop.local { LoopDrain() } }

    /// `holder`'s calls keep a draining loop up (held weakly: it goes with its loop's state).
    package func hold(_ holder: any DrainHolder) {
        holders.removeAll { $0.holder == nil }
        holders.append(Weak(holder: holder))
    }

    /// The calls every holder has now.
    package var callsHeld: Int { holders.reduce(0) { $0 + ($1.holder?.callsHeld ?? 0) } }

    func begin() { isDraining = true }

    /// The drain's bound: each holder ends what it holds.
    func bound() {
        for entry in holders { entry.holder?.endCallsForDrain() }
    }
}
