import Loop

/// A call whose media plays on a loop's `PlayoutClock`: a WebRTC call, a SIP call.
package protocol PlayoutClient: AnyObject {
    /// Over: the clock skips it until it is removed.
    var playoutEnded: Bool { get }
    /// Every packet of its outgoing stream due by `now`, for a call that sends on the clock's
    /// ticks (SIP's: a packet a tick, silence when there is no reply); `nextTick` as for `play`.
    /// Every call's are sent before any call plays, so that none waits for others' input.
    func send(dueBy now: UInt64, nextTick: UInt64)
    /// Every frame of input due by `now`, to the session; `nextTick` is when the clock ticks
    /// next, where a call far behind starts again.
    func play(dueBy now: UInt64, nextTick: UInt64)
}

extension PlayoutClient {
    /// Nothing: a call whose replies go out as they are made (WebRTC's).
    package func send(dueBy now: UInt64, nextTick: UInt64) {}
}

/// One 20 ms tick per loop for every call's playout, rather than a timer per call: at 500 calls a
/// timer each was 25,000 one-shot tasks a second, and their scheduling (the heap, the closures'
/// weak captures, their allocation) was most of the server's profile (docs/benchmarks.md, "WebRTC
/// calls"). Each call keeps its own frame clock and plays what is due at each tick, so a frame goes
/// to its session (or its peer) at most one tick after its time. WebRTC's and SIP's calls share it.
package final class PlayoutClock {
    private let loop: EventLoop
    private var calls: [any PlayoutClient] = []
    private var task: ScheduledTask?
    private var next: UInt64 = 0
    package static let tickNanoseconds: UInt64 = 20_000_000

    package init(loop: EventLoop) { self.loop = loop }

    /// Adds `call`; returns when the clock ticks next, the call's first frame time, so that every
    /// call's frames fall due on the clock's ticks and none waits a tick for a phase of its own
    /// (measured: out of phase, frames reached their sessions 9 ms late on average at 500 calls).
    package func add(_ call: any PlayoutClient) -> UInt64 {
        calls.append(call)
        if task == nil {
            next = MonotonicClock.nanoseconds() + Self.tickNanoseconds
            schedule()
        }
        return next
    }

    package func remove(_ call: any PlayoutClient) {
        calls.removeAll { $0 === call }
        if calls.isEmpty {
            task?.cancel()
            task = nil
        }
    }

    private func schedule() {
        let now = MonotonicClock.nanoseconds()
        task = loop.schedule(after: Double(next > now ? next - now : 0) / 1e9) { [unowned self] in tick() }
    }

    private func tick() {
        let now = MonotonicClock.nanoseconds()
        next += Self.tickNanoseconds
        // Far behind (a stalled loop): the next tick from now, not a burst of them.
        if next <= now { next = now + Self.tickNanoseconds }
        // A copy: a call that ends while it plays leaves the array, not this pass. Every call's
        // packets out first, then the input: a packet is not held behind the hearing and
        // turn-taking of every call before it in the tick, which varies with who is talking (at
        // 1,000 SIP calls on two loops, a reply frame's lateness p99 went from 6-7.5 ms to 2-3.5
        // ms, and the input, now after the sends, its mean lag from 1 to 3 ms: docs/benchmarks.md,
        // "SIP calls").
        for call in calls where !call.playoutEnded { call.send(dueBy: now, nextTick: next) }
        for call in calls where !call.playoutEnded { call.play(dueBy: now, nextTick: next) }
        if !calls.isEmpty { schedule() }
    }
}
