import Synchronization

/// A counter or gauge written by one loop (or several) and read by whoever scrapes. Relaxed
/// ordering: each value is independent and only ever summed.
public final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    public init() {}

    @inline(__always) public func add(_ n: Int) { _ = value.add(n, ordering: .relaxed) }
    public var current: Int { value.load(ordering: .relaxed) }
}
