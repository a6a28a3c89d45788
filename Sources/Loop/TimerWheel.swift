/// A hashed timing wheel over connection slots (uSockets/Varghese style): one pending deadline per
/// slot, O(1) to set or cancel, no allocation per timer. Links live in arrays indexed by slot, so a
/// connection without a deadline costs nothing here but its slot's few bytes.
struct TimerWheel {
    static let none: Int32 = -1

    /// Milliseconds per tick.
    let resolution: UInt64
    private var buckets: [Int32]
    private var next: [Int32] = []
    private var prev: [Int32] = []
    private var deadline: [UInt32] = []
    private var scheduled: [Bool] = []
    /// The last tick processed.
    private(set) var now: UInt32

    init(resolutionMilliseconds: UInt64 = 100, buckets: Int = 1024, startTick: UInt32) {
        resolution = resolutionMilliseconds
        self.buckets = Array(repeating: Self.none, count: buckets)
        now = startTick
    }

    mutating func grow(toSlots count: Int) {
        guard count > next.count else { return }
        let extra = count - next.count
        next += repeatElement(Self.none, count: extra)
        prev += repeatElement(Self.none, count: extra)
        deadline += repeatElement(0, count: extra)
        scheduled += repeatElement(false, count: extra)
    }

    /// Gives back the slots from `count` on (none of them may be wanted again until grown back).
    mutating func shrink(toSlots count: Int) {
        guard count < next.count else { return }
        for slot in count..<next.count where scheduled[slot] { cancel(Int32(slot)) }
        next = Array(next[..<count])
        prev = Array(prev[..<count])
        deadline = Array(deadline[..<count])
        scheduled = Array(scheduled[..<count])
    }

    /// Sets (or moves) the slot's deadline to `after` ticks from now.
    mutating func schedule(_ slot: Int32, after delta: UInt32) {
        cancel(slot)
        let s = Int(slot)
        let due = now &+ max(delta, 1)
        deadline[s] = due
        let b = Int(due % UInt32(buckets.count))
        next[s] = buckets[b]
        prev[s] = Self.none
        if buckets[b] != Self.none { prev[Int(buckets[b])] = slot }
        buckets[b] = slot
        scheduled[s] = true
    }

    mutating func cancel(_ slot: Int32) {
        let s = Int(slot)
        guard s < scheduled.count, scheduled[s] else { return }
        if prev[s] != Self.none {
            next[Int(prev[s])] = next[s]
        } else {
            buckets[Int(deadline[s] % UInt32(buckets.count))] = next[s]
        }
        if next[s] != Self.none { prev[Int(next[s])] = prev[s] }
        scheduled[s] = false
    }

    func deadline(of slot: Int32) -> UInt32? { scheduled[Int(slot)] ? deadline[Int(slot)] : nil }

    /// Moves time forward to `tick` and appends to `expired` every slot whose deadline has passed,
    /// unscheduling it. The caller fires them afterwards, free to schedule again.
    mutating func advance(to tick: UInt32, expired: inout [Int32]) {
        // Past a full turn every bucket is visited once; visiting more would only repeat.
        var steps = min(tick &- now, UInt32(buckets.count))
        while steps > 0 {
            now &+= 1
            steps -= 1
            var slot = buckets[Int(now % UInt32(buckets.count))]
            while slot != Self.none {
                let following = next[Int(slot)]
                if Int32(bitPattern: deadline[Int(slot)] &- tick) <= 0 {
                    cancel(slot)
                    expired.append(slot)
                }
                slot = following
            }
        }
        now = tick
    }
}
