/// When a loop's `PlayoutClock` plays each of its calls: the 20 ms frame period cut into `slots`
/// slots, each call in one of them, so that a loop's calls are not all played at one instant.
///
/// One instant for every call had a loop send 500 calls' packets (2.2 ms of `sendto`) and then
/// hand their frames to 500 sessions (2 ms more) in one go: the last packets and frames of the
/// pass were 4-5 ms behind the first, and more when the two loops' passes and the load client
/// met on two cores. At 1,000 SIP calls, 20 % talking, the frames into the sessions missed their
/// 5 ms p99 (docs/benchmarks.md, "SIP calls"). In four slots 5 ms apart, a slot's pass is a
/// quarter as long. Each call still plays on its own slot's ticks, so that a frame never waits for
/// a phase of its own (out of phase, frames reached their sessions 9 ms late on average at 500
/// calls, "WebRTC calls"), and a caller's packet, arriving at any phase of the period, waits no
/// longer on average in one slot than in another.
///
/// A value, tested without a loop or a clock: the clock asks it when to wake and which slots to run.
package struct PlayoutSchedule: Sendable {
    package static let tickNanoseconds: UInt64 = 20_000_000
    package static let slots = 4
    static let slotNanoseconds = tickNanoseconds / UInt64(slots)

    /// When the next slot is due, and which it is.
    package private(set) var next: UInt64
    package private(set) var slot: Int

    /// A schedule whose first slot (0) is due one slot after `now`.
    package init(startingAt now: UInt64) {
        next = now + Self.slotNanoseconds
        slot = 0
    }

    /// When `slot` runs next: a call joining it now starts its frames there.
    package func nextRun(of slot: Int) -> UInt64 {
        next + UInt64((slot - self.slot + Self.slots) % Self.slots) * Self.slotNanoseconds
    }

    /// The slots due by `now`, in order (`first` and the `count` after it, wrapping), and moves on
    /// to the first slot due after `now`. Late by more than a slot, the slots missed run now, once
    /// each; a loop stalled for longer than the whole period skips the rest rather than running
    /// them in a burst, and keeps its schedule: a frame's lag is measured against its stream's
    /// earliest, and a schedule moved by one stall would have every frame after it count late.
    package mutating func run(now: UInt64) -> (first: Int, count: Int) {
        let first = slot
        var count = 0
        while next <= now, count < Self.slots {
            next += Self.slotNanoseconds
            slot = (slot + 1) % Self.slots
            count += 1
        }
        if next <= now {
            let missed = (now - next) / Self.slotNanoseconds + 1
            next += missed * Self.slotNanoseconds
            slot = (slot + Int(missed % UInt64(Self.slots))) % Self.slots
        }
        return (first, count)
    }
}
