#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC in nanoseconds: deadlines, latencies and rates must not jump when the wall
/// clock is set.
public enum MonotonicClock {
    public static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    public static func seconds(since start: UInt64) -> Double {
        Double(nanoseconds() &- start) / 1e9
    }

    public static func nanoseconds(_ seconds: Double) -> UInt64 {
        UInt64(max(0, seconds) * 1e9)
    }
}

/// The wall clock in Unix seconds: for what other machines read (expiry times in tokens), never
/// for measuring time on this one (that is `MonotonicClock`).
public enum WallClock {
    public static func seconds() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return ts.tv_sec
    }

    /// Unix time in nanoseconds (a trace's timestamps).
    public static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
