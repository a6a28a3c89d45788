import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// What a registered descriptor wants to hear about.
struct Interest: OptionSet {
    let rawValue: UInt32
    static let readable = Interest(rawValue: EPOLLIN.rawValue | EPOLLRDHUP.rawValue)
    static let writable = Interest(rawValue: EPOLLOUT.rawValue)
    /// Edge-triggered: reported once per change of readiness, so the owner reads until EAGAIN.
    static let edge = Interest(rawValue: EPOLLET.rawValue)
}

/// A readiness report from `Epoll.wait`.
struct Readiness {
    let token: UInt64
    let events: UInt32

    var readable: Bool { events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 }
    var writable: Bool { events & (EPOLLOUT.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 }
    var hungUp: Bool { events & (EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 }
}

/// The OS backend of the event loop: epoll(7) and nothing else. The loop never calls epoll itself.
/// Each registration carries a 64-bit token chosen by the caller (see `ConnectionID`).
struct Epoll: ~Copyable {
    let fd: Int32
    private let events: UnsafeMutablePointer<epoll_event>
    private let capacity: Int

    init(capacity: Int = 1024) throws(SystemError) {
        fd = try Sys.retrying("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        self.capacity = capacity
        events = .allocate(capacity: capacity)
    }

    deinit {
        events.deallocate()
        Sys.close(fd)
    }

    func add(_ descriptor: Int32, _ interest: Interest, token: UInt64) throws(SystemError) {
        try control(EPOLL_CTL_ADD, descriptor, interest, token)
    }

    func modify(_ descriptor: Int32, _ interest: Interest, token: UInt64) throws(SystemError) {
        try control(EPOLL_CTL_MOD, descriptor, interest, token)
    }

    func remove(_ descriptor: Int32) {
        // Closing a descriptor removes it too; this is for descriptors that stay open.
        _ = epoll_ctl(fd, EPOLL_CTL_DEL, descriptor, nil)
    }

    private func control(_ op: Int32, _ descriptor: Int32, _ interest: Interest, _ token: UInt64) throws(SystemError) {
        var event = epoll_event()
        event.events = interest.rawValue
        event.data.u64 = token
        _ = try Sys.retrying("epoll_ctl") { epoll_ctl(fd, op, descriptor, &event) }
    }

    /// Waits up to `timeoutMilliseconds` (-1: forever); returns how many descriptors are ready,
    /// to be read with `readiness(at:)` before the next wait.
    func wait(timeoutMilliseconds: Int32) -> Int {
        let n = epoll_wait(fd, events, Int32(capacity), timeoutMilliseconds)
        return max(0, Int(n))  // EINTR and time-outs both mean "nothing ready"
    }

    func readiness(at i: Int) -> Readiness {
        Readiness(token: events[i].data.u64, events: events[i].events)
    }
}
