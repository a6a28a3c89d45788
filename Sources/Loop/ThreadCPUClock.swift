#if canImport(Glibc)
import Glibc
#endif

/// CPU time of the calling thread, for the real-time factors of work done on a worker.
public struct ThreadCPUClock {
    private let start = Self.now()

    public init() {}

    /// Seconds of this thread's CPU since the clock was made.
    public var elapsed: Double { Self.now() - start }

    private static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
