/// What plays on a loop's `PlayoutClock`: a WebRTC call's or a SIP call's media, a spoken reply's pace.
package protocol PlayoutClient: AnyObject {
    /// Over: the clock skips it, and lets it go at its slot's next tick (if it has not left).
    var playoutEnded: Bool { get }
    /// Every packet of its outgoing stream due by `now`, for a call that sends on the clock's
    /// ticks (SIP's: a packet a tick, silence when there is no reply); `nextTick` as for `play`.
    /// The packets of every call in a slot go out before any of them plays, so that none waits for
    /// the others' input.
    func send(dueBy now: UInt64, nextTick: UInt64)
    /// Every frame of input due by `now`, to the session; `nextTick` is when the call's slot runs
    /// next, where a call far behind starts again.
    func play(dueBy now: UInt64, nextTick: UInt64)
}

/// Work that waits for the end of the tick that is running (every slot due has played): the
/// loop's VAD windows the calls' frames staged, scored in one run (`VoiceActivityPass`).
package protocol PlayoutTickEnd: AnyObject {
    func tickEnded()
}

extension PlayoutClient {
    /// Nothing: a call whose replies go out as they are made (WebRTC's).
    package func send(dueBy now: UInt64, nextTick: UInt64) {}
}

/// One clock per loop for every call's playout, rather than a timer per call: at 500 calls a
/// timer each was 25,000 one-shot tasks a second, and their scheduling (the heap, the closures'
/// weak captures, their allocation) was most of the server's profile (docs/benchmarks.md, "WebRTC
/// calls"). Each call keeps its own frame clock and plays what is due at each of its slot's ticks
/// (`PlayoutSchedule`: four slots 5 ms apart, a call in the emptiest when it joins), so a frame
/// goes to its session (or its peer) at most one period after its time. WebRTC's and SIP's calls
/// share it, and every spoken reply is paced on it (`SpeechOutput`), whatever carries it.
///
/// It runs on the loop's clock (`EventLoop.nanoseconds`: the machine's, or a test's), and wakes
/// only for slots that hold something: one reply on a loop is one wake a period, as its own
/// 20 ms timer was.
package final class PlayoutClock {
    private let loop: EventLoop
    private var slots = [[any PlayoutClient]](repeating: [], count: PlayoutSchedule.slots)
    private var task: ScheduledTask?
    /// When `task` fires.
    private var taskAt: UInt64 = .max
    /// In a tick: a call added now joins the running schedule, and the tick's end wakes the next.
    private var ticking = false
    private var schedule = PlayoutSchedule(startingAt: 0)
    /// Told once as the running tick ends; kept with its capacity, so a tick allocates nothing.
    private var atTickEnd: [any PlayoutTickEnd] = []

    private init(loop: EventLoop) { self.loop = loop }

    /// The loop's clock, made when its first call asks.
    package static func on(_ loop: EventLoop) -> PlayoutClock { loop.local { PlayoutClock(loop: loop) } }

    /// Adds `call` to the slot with the fewest calls; returns when that slot runs next, the call's
    /// first frame time, so that its frames fall due on its slot's ticks.
    package func add(_ call: any PlayoutClient) -> UInt64 {
        if task == nil, !ticking {
            schedule = PlayoutSchedule(startingAt: loop.nanoseconds())
        }
        let slot = slots.indices.min { slots[$0].count < slots[$1].count } ?? 0
        slots[slot].append(call)
        // A slot that was empty may now run before the wake set for the others (a reply joins
        // each time it has pieces again: the timer is moved only when it must be).
        let first = schedule.nextRun(of: slot)
        if !ticking, task == nil || first < taskAt { wake() }
        return first
    }

    /// Whether a tick is running now (its clients playing): `whenTickEnds` then runs at its end.
    package var isTicking: Bool { ticking }

    /// `work` is told once the running tick has played every slot due (only while `isTicking`).
    package func whenTickEnds(_ work: any PlayoutTickEnd) {
        precondition(ticking, "whenTickEnds outside a tick")
        atTickEnd.append(work)
    }

    /// Clients on the clock, and whether it will wake for them: for tests and the loop's account.
    package var clients: Int { slots.reduce(0) { $0 + $1.count } }
    package var isRunning: Bool { task != nil }

    package func remove(_ call: any PlayoutClient) {
        for slot in slots.indices { slots[slot].removeAll { $0 === call } }
        if slots.allSatisfy(\.isEmpty) {
            task?.cancel()
            task = nil
        }
    }

    /// Sets the one wake-up for the first slot that holds something, if any does.
    private func wake() {
        task?.cancel()
        task = nil
        guard let due = slots.indices.lazy.filter({ !self.slots[$0].isEmpty }).map({ self.schedule.nextRun(of: $0) }).min() else { return }
        let now = loop.nanoseconds()
        taskAt = due
        task = loop.schedule(after: Double(due > now ? due - now : 0) / 1e9) { [unowned self] in tick() }
    }

    private func tick() {
        // This tick's task has fired: whatever the passes add or remove, one wake follows, at the end.
        task = nil
        ticking = true
        defer { ticking = false }
        let now = loop.nanoseconds()
        let (first, count) = schedule.run(now: now)
        for offset in 0..<count {
            let slot = (first + offset) % PlayoutSchedule.slots
            let following = schedule.nextRun(of: slot)
            // A copy: a call that ends during the pass leaves the array, not this pass. The slot's
            // packets go out first, then its input: a packet is not held behind the hearing and
            // turn-taking of the calls before it (at 1,000 SIP calls in one slot on two loops, a
            // reply frame's lateness p99 went from 6-7.5 ms to 2-3.5 ms: "SIP calls").
            let calls = slots[slot]
            var ended = false
            for call in calls where !call.playoutEnded { call.send(dueBy: now, nextTick: following) }
            for call in calls {
                if call.playoutEnded { ended = true } else { call.play(dueBy: now, nextTick: following) }
            }
            // A client that ended without leaving is not held (nor ticked for) past its end.
            if ended { slots[slot].removeAll { $0.playoutEnded } }
        }
        // Still in the tick: what the work starts (a reply's first pieces) joins the schedule.
        var told = 0
        while told < atTickEnd.count {
            atTickEnd[told].tickEnded()
            told += 1
        }
        atTickEnd.removeAll(keepingCapacity: true)
        wake()
    }
}
