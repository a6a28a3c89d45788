import Loop

/// Server-added latency runs from an upstream delta's bytes in hand to the client's frame written.
/// A frame a session sends is written when its loop is done with the event that carried the delta
/// (the loop corks a connection's writes, docs/architecture.md), so each observation waits for
/// that: the deltas' times are kept here and observed by the after-each-event hook, which runs
/// after the server's flush. One per loop
/// (`EventLoop.local`), made by the loop's first delta; no allocation per delta once the list has
/// grown to a pass's worth.
final class ServerAddedLatency {
    private var pending: [UInt64] = []

    private init(loop: EventLoop) {
        // Registered after the server's flush (which its loop registers as it starts), so it runs
        // after it: hooks run in the order they were added.
        loop.afterEachEvent { [self] in observe() }
    }

    static func on(_ loop: EventLoop) -> ServerAddedLatency { loop.local { ServerAddedLatency(loop: loop) } }

    /// A delta read at `receivedAt` has been handed to the session, whose frame goes out this pass.
    func delivered(receivedAt: UInt64) { pending.append(receivedAt) }

    private func observe() {
        guard !pending.isEmpty else { return }
        let now = MonotonicClock.nanoseconds()
        for receivedAt in pending { UpstreamMetrics.shared.serverAdded.observe(nanoseconds: now &- receivedAt) }
        pending.removeAll(keepingCapacity: true)
    }
}
