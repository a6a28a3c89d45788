/// A loop's one timer facility: every deadline and tick on the loop goes through it, on one
/// monotonic clock, swept once per iteration, and it alone decides how long epoll may sleep.
///
/// It keeps two kinds of timer because they have opposite shapes:
/// - Each registration's one deadline (request head, idle/ping, close, TLS handshake) on a hashed
///   wheel of 100 ms ticks (`TimerWheel`): O(1) to set, move or clear, no allocation, nothing but a
///   slot's few bytes when none is pending. There is one per connection and it is moved on nearly
///   every read, so it must cost nothing; a 100 ms granularity is plenty for time-outs of seconds
///   (uSockets sweeps its socket time-outs just as coarsely).
/// - Callbacks (`schedule`) at nanosecond deadlines on a min-heap (`TaskScheduler`): the 20 ms
///   ticks that pace spoken replies and the upstream client's time-outs. Few at a time, and a
///   100 ms grain would make audio late.
struct LoopTimers {
    static let tickMilliseconds: UInt64 = 100

    private var wheel: TimerWheel
    private var tasks = TaskScheduler()
    private let startNanoseconds: UInt64

    init(startNanoseconds: UInt64) {
        self.startNanoseconds = startNanoseconds
        wheel = TimerWheel(resolutionMilliseconds: Self.tickMilliseconds, startTick: 0)
    }

    static func ticks(seconds: Double) -> UInt32 { UInt32(max(1, (seconds * 1000 / Double(tickMilliseconds)).rounded(.up))) }

    /// The last tick swept.
    var now: UInt32 { wheel.now }

    mutating func grow(toSlots count: Int) { wheel.grow(toSlots: count) }
    mutating func shrink(toSlots count: Int) { wheel.shrink(toSlots: count) }

    mutating func setDeadline(_ slot: Int32, afterTicks ticks: UInt32) { wheel.schedule(slot, after: ticks) }

    mutating func clearDeadline(_ slot: Int32) { wheel.cancel(slot) }

    mutating func schedule(at deadline: UInt64, _ body: @escaping () -> Void) -> ScheduledTask {
        tasks.schedule(at: deadline, body)
    }

    /// Nanoseconds until the next callback, or at most one wheel tick (the wheel is swept on the
    /// tick's grain, so a wait up to the next tick's start would do; a whole tick is simpler and
    /// at most 100 ms late for a deadline of seconds).
    mutating func nanosecondsUntilNext(now: UInt64) -> UInt64 {
        let tick = Self.tickMilliseconds * 1_000_000
        guard let deadline = tasks.nextDeadline() else { return tick }
        return deadline > now ? min(tick, deadline - now) : 0
    }

    /// The next callback's deadline, if any.
    mutating func nextDeadline() -> UInt64? { tasks.nextDeadline() }

    /// Moves time to `now`: appends to `expired` the slots whose deadline passed (unscheduled, for
    /// the caller to fire) and returns the callbacks due, in deadline order.
    mutating func advance(now: UInt64, expired: inout [Int32]) -> [() -> Void] {
        let tick = UInt32(truncatingIfNeeded: (now - startNanoseconds) / (Self.tickMilliseconds * 1_000_000))
        if tick != wheel.now { wheel.advance(to: tick, expired: &expired) }
        return tasks.isEmpty ? [] : tasks.due(at: now)
    }
}
