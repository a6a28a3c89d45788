import Loop

/// One 20 ms tick per loop for every call's playout, rather than a timer per call: at 500 calls a
/// timer each was 25,000 one-shot tasks a second, and their scheduling (the heap, the closures'
/// weak captures, their allocation) was most of the server's profile (docs/benchmarks.md, "WebRTC
/// calls"). Each call keeps its own frame clock (`CallMedia`) and plays what is due at each tick, so
/// a frame goes to its session at most one tick after its time.
final class PlayoutClock {
    private let loop: EventLoop
    private var calls: [WebRTCCall] = []
    private var task: ScheduledTask?
    private var next: UInt64 = 0
    static let tickNanoseconds: UInt64 = 20_000_000

    init(loop: EventLoop) { self.loop = loop }

    /// Adds `call`; returns when the clock ticks next, the call's first frame time, so that every
    /// call's frames fall due on the clock's ticks and none waits a tick for a phase of its own
    /// (measured: out of phase, frames reached their sessions 9 ms late on average at 500 calls).
    func add(_ call: WebRTCCall) -> UInt64 {
        calls.append(call)
        if task == nil {
            next = MonotonicClock.nanoseconds() + Self.tickNanoseconds
            schedule()
        }
        return next
    }

    func remove(_ call: WebRTCCall) {
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
        // A copy: a call that ends while it plays leaves the array, not this pass.
        for call in calls where !call.ended { call.media.play(dueBy: now, nextTick: next, call: call) }
        if !calls.isEmpty { schedule() }
    }
}
