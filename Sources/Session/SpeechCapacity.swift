import Synchronization

/// How many voice sessions this process takes before it refuses more: the speech helper's
/// decodes, verdicts and voices are shared by every session on the box, and past what two cores
/// decode in real time every session's turns slow down together (at 10 talkers on this machine
/// before the words and the 15 s window: 4 s waits for every turn's end, transcriptions of 3.3 s,
/// barge-ins missed). A session past the capacity is refused at the upgrade (503 `server_busy`,
/// Retry-After) rather than admitted to make every session slow.
///
/// The box's capacity (`--speech-capacity`; by default `talkersPerCore` times the cores) is split
/// evenly between the worker processes, each counting its own: the kernel spreads connections
/// evenly across them (SO_REUSEPORT), and no state is shared that a worker's death could leak.
public final class SpeechCapacity: Sendable {
    /// Talkers one core carries with the turn-taking targets held (docs/benchmarks.md, "Talkers
    /// per core"): people talking about half the time, each turn decoded at its quiet.
    public static let talkersPerCore = 5

    public let limit: Int
    private let taken = Atomic<Int>(0)

    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// The process's share of the box's `capacity` with `workers` processes.
    public static func share(of capacity: Int, workers: Int) -> Int {
        (capacity + max(1, workers) - 1) / max(1, workers)
    }

    public var inUse: Int { taken.load(ordering: .relaxed) }

    /// A seat for a new session, or nil at the limit. The seat is given back when released (or
    /// when its holder goes).
    public func take() -> Seat? {
        while true {
            let now = taken.load(ordering: .relaxed)
            guard now < limit else { return nil }
            if taken.compareExchange(expected: now, desired: now + 1, ordering: .acquiringAndReleasing).exchanged { return Seat(self) }
        }
    }

    fileprivate func giveBack() {
        taken.subtract(1, ordering: .releasing)
    }

    /// One session's place; released once, explicitly or when its holder frees it.
    public final class Seat: Sendable {
        private let capacity: SpeechCapacity
        private let released = Atomic<Bool>(false)

        fileprivate init(_ capacity: SpeechCapacity) {
            self.capacity = capacity
        }

        public func release() {
            if !released.exchange(true, ordering: .acquiringAndReleasing) { capacity.giveBack() }
        }

        deinit { release() }
    }
}
