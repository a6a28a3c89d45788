import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The time a loop runs on: the machine's monotonic clock, or a `ManualClock` a test moves.
///
/// Everything a session decides by time (how much of a reply has played, when a sentence is asked
/// for, when the echo guard's window ends, the 20 ms ticks that pace audio) reads its loop's clock,
/// so a test that drives the clock decides what happens at each instant, however busy the CPU is:
/// str0m takes time as an input for the same reason, and drives its whole WebRTC state "faster
/// than realtime" in its tests (issue 50).
public enum LoopClock: Sendable {
    case monotonic
    case manual(ManualClock)

    @inline(__always) public func nanoseconds() -> UInt64 {
        switch self {
        case .monotonic: MonotonicClock.nanoseconds()
        case .manual(let clock): clock.nanoseconds()
        }
    }
}

/// Time that passes only when a test says so, for one loop.
///
/// The test asks for time to move (`advance`); the loop moves it, from one due timer to the next,
/// only while it is settled: no read queued, no offloaded work out (a decode, a synthesis, an
/// encode), nothing in its inbox and no callback due. So work that takes a second of CPU on a
/// starved machine takes no time on this clock, and a decision never races the CPU. `advance`
/// returns once the loop has reached the new time and settled there.
public final class ManualClock: Sendable {
    private let present: Atomic<UInt64>
    private let target: Atomic<UInt64>
    /// Requests to move (`advance` calls) and the last one the loop answered, settled at its target.
    private let requested = Atomic<UInt64>(0)
    private let answered = Atomic<UInt64>(0)
    private let wakeFD = Atomic<Int32>(-1)

    /// Starts at `start` nanoseconds: a second, so that nothing reads a zero as "never".
    public init(start: UInt64 = 1_000_000_000) {
        present = Atomic(start)
        target = Atomic(start)
    }

    public func nanoseconds() -> UInt64 { present.load(ordering: .acquiring) }

    /// Real time a step may wait for the loop to settle: work that has not answered in a minute
    /// never will (a helper's longest deadline is 30 s, and it does not run on this clock).
    public static let settleSeconds: Double = 60

    /// Moves time on by `milliseconds` and waits (the caller's thread, never the loop's) until the
    /// loop is settled there; false when it did not settle within `settleSeconds` of real time.
    public func advance(milliseconds: Int) -> Bool {
        target.add(UInt64(max(0, milliseconds)) * 1_000_000, ordering: .releasing)
        return settle()
    }

    /// Waits until the loop has nothing left to do at the present time, without moving it.
    public func settle() -> Bool {
        let request = requested.add(1, ordering: .releasing).newValue
        let fd = wakeFD.load(ordering: .acquiring)
        if fd >= 0 { Sys.signal(eventfd: fd) }
        let deadline = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(Self.settleSeconds)
        while answered.load(ordering: .acquiring) < request {
            if MonotonicClock.nanoseconds() > deadline { return false }
            usleep(200)
        }
        return true
    }

    // MARK: The loop's side

    func bind(wakeFD fd: Int32) {
        wakeFD.store(fd, ordering: .releasing)
    }

    /// Called by the loop at the end of each pass: when it is settled, moves time to the next
    /// callback's deadline or the target, whichever is first (true: time moved, run the timers
    /// now), or, at the target, answers the requests so far.
    func step(settled: Bool, nextDeadline: UInt64?) -> Bool {
        guard settled else { return false }
        let request = requested.load(ordering: .acquiring)
        let goal = target.load(ordering: .acquiring)
        let now = present.load(ordering: .relaxed)
        guard now < goal else {
            answered.store(request, ordering: .releasing)
            return false
        }
        present.store(min(goal, nextDeadline ?? goal), ordering: .releasing)
        return true
    }
}
