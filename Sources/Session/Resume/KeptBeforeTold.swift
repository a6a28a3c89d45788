/// A resumable session's rule for its outgoing frames: a client is told an item is done only once
/// the store keeps it, and nothing the session sends after that event overtakes it (its client
/// acknowledges by sequence number, so an event seen early would acknowledge the one held).
///
/// Without it, a remote store's write was on its way but not made when the client heard: a node
/// killed in that moment, or a resume elsewhere before a Redis outage's held writes were made,
/// lost items the client had been told were done (make chaos: 297 of 161,580 with Redis fsyncing
/// every write, docs/benchmarks.md). An embedded store keeps an item before its call returns, so
/// nothing is ever held for it. The wait is bounded (`ResumeSettings.storeWaitSeconds`): past it
/// the frames go, unkept, rather than a store that is away silencing every session.
///
/// A value machine: the session counts writes in and answers out, and sends what it returns.
struct KeptBeforeTold {
    enum Frame: Equatable {
        case text(String)
        case binary([UInt8])
    }

    /// The store's writes not yet answered.
    private(set) var outstanding = 0
    /// What waits for them, in order.
    private(set) var held: [Frame] = []
    /// Answers to writes begun before the last time the wait was given up are not counted again.
    private var epoch = 0

    /// A completed item went to the store; its answer comes back with this ticket.
    mutating func writeBegan() -> Int {
        outstanding += 1
        return epoch
    }

    /// A frame for the client: true to send it now; false when it was held.
    mutating func admit(_ frame: Frame) -> Bool {
        guard outstanding > 0 || !held.isEmpty else { return true }
        held.append(frame)
        return false
    }

    /// The store answered the write of `ticket` (whether it kept it or not: a refused write will
    /// never be kept, and waiting on would only silence the session). What may go now, in order.
    mutating func answered(_ ticket: Int) -> [Frame] {
        guard ticket == epoch, outstanding > 0 else { return [] }
        outstanding -= 1
        return outstanding == 0 ? release() : []
    }

    /// The wait passed its bound: everything held goes, and the writes still out are not waited for.
    mutating func gaveUp() -> [Frame] {
        epoch += 1
        outstanding = 0
        return release()
    }

    /// The client went: what was held is in the replay log (numbered events) or was never going
    /// to be replayed (audio frames), so it is dropped here; the writes are still waited for.
    mutating func clientLeft() {
        held = []
    }

    /// Whether anything waits (the session keeps a timer for the bound while it does).
    var isHolding: Bool { !held.isEmpty }

    private mutating func release() -> [Frame] {
        defer { held = [] }
        return held
    }
}
