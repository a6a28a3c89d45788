import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// What a registered descriptor wants to hear about.
public struct Interest: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let readable = Interest(rawValue: EPOLLIN.rawValue | EPOLLRDHUP.rawValue)
    public static let writable = Interest(rawValue: EPOLLOUT.rawValue)
    /// Edge-triggered: reported once per change of readiness, so the owner reads until EAGAIN.
    public static let edge = Interest(rawValue: EPOLLET.rawValue)
}

/// A readiness report from `Epoll.wait`.
struct Readiness {
    let token: UInt64
    let events: UInt32

    var readable: Bool { events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 }
    var writable: Bool { events & (EPOLLOUT.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 }
    var hungUp: Bool { events & (EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 }
}

/// The OS backend of the event loop, as `ae_epoll.c` is Redis's: create, add, modify, remove,
/// wait. The loop never says epoll itself. Each registration carries a 64-bit token chosen by
/// the loop (a registration's slot and generation, see `EventLoop`).
struct Epoll: ~Copyable {
    let fd: Int32
    private let events: UnsafeMutablePointer<epoll_event>
    private let capacity: Int
    /// Whether epoll_pwait2 works here; false after the first refusal.
    private var precise = true

    init(capacity: Int = 1024) throws(SystemError) {
        fd = try Sys.epollCreate()
        self.capacity = capacity
        events = .allocate(capacity: capacity)
    }

    deinit {
        events.deallocate()
        Sys.close(fd)
    }

    func add(_ descriptor: Int32, _ interest: Interest, token: UInt64) throws(SystemError) {
        try Sys.epollControl(fd, EPOLL_CTL_ADD, descriptor, events: interest.rawValue, token: token)
    }

    func modify(_ descriptor: Int32, _ interest: Interest, token: UInt64) throws(SystemError) {
        try Sys.epollControl(fd, EPOLL_CTL_MOD, descriptor, events: interest.rawValue, token: token)
    }

    func remove(_ descriptor: Int32) {
        Sys.epollRemove(fd, descriptor)
    }

    /// Waits up to `timeoutNanoseconds`; returns how many descriptors are ready,
    /// to be read with `readiness(at:)` before the next wait.
    ///
    /// To the nanosecond where the kernel has epoll_pwait2: epoll_wait's whole milliseconds,
    /// rounded up so that a timer never fires early, woke the 20 ms playout ticks 0.5 ms late on
    /// average and up to 1 ms, a lag every call's every frame carried (docs/benchmarks.md, "SIP
    /// calls"). Without it, milliseconds.
    mutating func wait(timeoutNanoseconds: UInt64) -> Int {
        if precise, let ready = Sys.epollWait(fd, events, capacity: capacity, timeoutNanoseconds: timeoutNanoseconds) {
            return ready
        }
        precise = false
        let milliseconds = Int32(min((timeoutNanoseconds + 999_999) / 1_000_000, UInt64(Int32.max)))
        return Sys.epollWait(fd, events, capacity: capacity, timeoutMilliseconds: milliseconds)
    }

    func readiness(at i: Int) -> Readiness {
        Readiness(token: events[i].data.u64, events: events[i].events)
    }
}
