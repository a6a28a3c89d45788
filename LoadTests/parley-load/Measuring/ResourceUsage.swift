import CLinux
import JSON
#if canImport(Glibc)
import Glibc
#endif

/// CPU time from getrusage(2): printed beside every figure so a reader can tell whether the client,
/// not the server, was the bottleneck.
struct CPUTime: Equatable {
    var user: Double
    var system: Double
    var total: Double { user + system }

    static let zero = CPUTime(user: 0, system: 0)

    /// This process.
    static func ofSelf() -> CPUTime { measure(__rusage_who_t(RUSAGE_SELF.rawValue)) }

    /// Children that have exited and been waited for (running children count nothing yet).
    static func ofWaitedChildren() -> CPUTime { measure(__rusage_who_t(RUSAGE_CHILDREN.rawValue)) }

    private static func measure(_ who: __rusage_who_t) -> CPUTime {
        var usage = rusage()
        getrusage(who, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return CPUTime(user: seconds(usage.ru_utime), system: seconds(usage.ru_stime))
    }

    static func + (a: CPUTime, b: CPUTime) -> CPUTime { CPUTime(user: a.user + b.user, system: a.system + b.system) }
    static func - (a: CPUTime, b: CPUTime) -> CPUTime { CPUTime(user: a.user - b.user, system: a.system - b.system) }

    var json: JSON { .object([("user_seconds", .number(user)), ("system_seconds", .number(system))]) }

    init(user: Double, system: Double) {
        self.user = user
        self.system = system
    }

    init(json: JSON?) {
        self.init(user: json?["user_seconds"]?.double ?? 0, system: json?["system_seconds"]?.double ?? 0)
    }
}

/// The per-process descriptor limit, which bounds how many sockets one process can hold.
enum DescriptorLimit {
    // (RLIM_INFINITY is all ones; its C macro does not import, hence rlim_t.max.)
    /// Raises the soft RLIMIT_NOFILE to the hard limit (the most an unprivileged process may) and
    /// returns the limit now in force.
    @discardableResult
    static func raiseToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur == rlim_t.max ? Int.max : Int(limit.rlim_cur)
    }

    static func hard() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return limit.rlim_max == rlim_t.max ? Int.max : Int(limit.rlim_max)
    }
}

/// Online cores, for "client used 1.7 of 2 cores".
enum Cores {
    static var online: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}

/// The whole machine's CPU time from /proc/stat, for the share the hypervisor took ("steal"): on a
/// shared VM, a run with much steal had fewer cores than it seems, and its figures say so.
struct MachineCPU {
    let total: Double
    let steal: Double
    /// Neither idle, waiting for I/O, nor stolen: what every process on the machine ran.
    let busy: Double

    /// nil where /proc/stat cannot be read.
    static func now() -> MachineCPU? {
        guard let text = try? TextFile.read("/proc/stat"), let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        // user nice system idle iowait irq softirq steal (guest time is already inside user).
        guard fields.count >= 8 else { return nil }
        return MachineCPU(total: fields[0..<8].reduce(0, +), steal: fields[7], busy: fields[0..<8].reduce(0, +) - fields[3] - fields[4] - fields[7])
    }

    /// CPU seconds every process on the machine ran between `earlier` and this reading.
    func busySeconds(since earlier: MachineCPU) -> Double { (busy - earlier.busy) / Double(sysconf(Int32(_SC_CLK_TCK))) }

    /// The share of CPU time stolen between `earlier` and this reading.
    func stealFraction(since earlier: MachineCPU) -> Double {
        let total = self.total - earlier.total
        return total > 0 ? (steal - earlier.steal) / total : 0
    }
}
