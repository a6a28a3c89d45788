import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// A worker's epoll instance. Level-triggered: a client reads until EAGAIN anyway, and level
/// triggering means a budget-limited read is simply reported again on the next wait.
final class Poller {
    let fd: Int32
    private let events: UnsafeMutablePointer<epoll_event>
    private let capacity = 1024

    static let readable = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
    static let writable = EPOLLOUT.rawValue

    init() throws(ClientSocket.Failure) {
        fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw ClientSocket.Failure(call: "epoll_create1", errno: errno) }
        events = .allocate(capacity: capacity)
    }

    deinit {
        events.deallocate()
        Glibc.close(fd)
    }

    func add(_ descriptor: Int32, events interest: UInt32, token: UInt64) throws(ClientSocket.Failure) {
        try control(EPOLL_CTL_ADD, descriptor, interest, token)
    }

    func modify(_ descriptor: Int32, events interest: UInt32, token: UInt64) {
        // Fails only for a descriptor that is not registered, which would be a bug here.
        try? control(EPOLL_CTL_MOD, descriptor, interest, token)
    }

    private func control(_ op: Int32, _ descriptor: Int32, _ interest: UInt32, _ token: UInt64) throws(ClientSocket.Failure) {
        var event = epoll_event()
        event.events = interest
        event.data.u64 = token
        guard epoll_ctl(fd, op, descriptor, &event) == 0 else { throw ClientSocket.Failure(call: "epoll_ctl", errno: errno) }
    }

    /// Waits up to `timeoutMilliseconds` and calls `body` with each ready token and its events.
    func wait(timeoutMilliseconds: Int32, _ body: (UInt64, UInt32) -> Void) {
        let n = epoll_wait(fd, events, Int32(capacity), timeoutMilliseconds)
        guard n > 0 else { return }  // EINTR and time-outs both mean "nothing ready"
        for i in 0..<Int(n) { body(events[i].data.u64, events[i].events) }
    }
}
