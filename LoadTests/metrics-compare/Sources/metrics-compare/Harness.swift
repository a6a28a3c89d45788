import CAllocCount
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Monotonic nanoseconds (CLOCK_MONOTONIC).
@inline(__always) func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// CPU time of the calling thread, ns: what a scrape cost, whoever else had the core meanwhile.
@inline(__always) func threadCPU() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// xorshift64*: cheap, deterministic values for the simulated sessions (the same on every side).
struct Random {
    var state: UInt64
    init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed }
    @inline(__always) mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }
    /// Uniform in [0, 1).
    @inline(__always) mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    /// Uniform in [low, high) nanoseconds.
    @inline(__always) mutating func nanoseconds(_ low: UInt64, _ high: UInt64) -> UInt64 { low + next() % (high - low) }
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? 0 : s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

func percentile(_ xs: [Double], _ p: Double) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? 0 : s[min(s.count - 1, Int(Double(s.count - 1) * p + 0.5))]
}

/// Runs `body(thread)` on `threads` POSIX threads released together; returns the wall time in ns
/// from the release to the last one's end.
func onThreads(_ threads: Int, _ body: @escaping @Sendable (Int) -> Void) -> UInt64 {
    final class Gate: Sendable {
        let ready = Atomic<Int>(0)
        let go = Atomic<Bool>(false)
    }
    final class Context: Sendable {
        let index: Int
        let gate: Gate
        let body: @Sendable (Int) -> Void
        init(index: Int, gate: Gate, body: @escaping @Sendable (Int) -> Void) {
            self.index = index; self.gate = gate; self.body = body
        }
    }
    let gate = Gate()
    var ids: [pthread_t] = []
    for i in 0..<threads {
        let context = Unmanaged.passRetained(Context(index: i, gate: gate, body: body)).toOpaque()
        var id = pthread_t()
        let rc = pthread_create(&id, nil, { raw in
            let context = Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue()
            context.gate.ready.add(1, ordering: .acquiringAndReleasing)
            while !context.gate.go.load(ordering: .acquiring) {}
            context.body(context.index)
            return nil
        }, context)
        precondition(rc == 0, "pthread_create: \(rc)")
        ids.append(id)
    }
    while gate.ready.load(ordering: .acquiring) < threads {}
    let start = now()
    gate.go.store(true, ordering: .releasing)
    for id in ids { pthread_join(id, nil) }
    return now() - start
}

/// Allocation calls and bytes that `body` makes on this thread.
struct Allocations {
    var calls: UInt64
    var bytes: UInt64
}

@inline(never) func counted<T>(_ body: () -> T) -> (T, Allocations) {
    alloc_count_start()
    let result = body()
    alloc_count_stop()
    return (result, Allocations(calls: alloc_count_calls(), bytes: alloc_count_bytes()))
}

/// Keeps the optimiser from discarding a result.
@inline(never) func blackHole<T>(_ x: T) { withExtendedLifetime(x) {} }

/// Latency-like values for the histogram loops (25 µs to 2 ms), cycled.
let values: [UInt64] = {
    var r = Random(seed: 42)
    return (0..<4096).map { _ in r.nanoseconds(25_000, 2_000_000) }
}()
