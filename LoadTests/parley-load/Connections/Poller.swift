import CLinux
import Loop
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
        do { fd = try Sys.epollCreate() } catch { throw ClientSocket.Failure(error) }
        events = .allocate(capacity: capacity)
    }

    deinit {
        events.deallocate()
        Sys.close(fd)
    }

    func add(_ descriptor: Int32, events interest: UInt32, token: UInt64) throws(ClientSocket.Failure) {
        try control(EPOLL_CTL_ADD, descriptor, interest, token)
    }

    func modify(_ descriptor: Int32, events interest: UInt32, token: UInt64) {
        // Fails only for a descriptor that is not registered, which would be a bug here.
        try? control(EPOLL_CTL_MOD, descriptor, interest, token)
    }

    private func control(_ op: Int32, _ descriptor: Int32, _ interest: UInt32, _ token: UInt64) throws(ClientSocket.Failure) {
        do { try Sys.epollControl(fd, op, descriptor, events: interest, token: token) } catch { throw ClientSocket.Failure(error) }
    }

    /// Waits up to `timeoutMilliseconds` and calls `body` with each ready token and its events.
    func wait(timeoutMilliseconds: Int32, _ body: (UInt64, UInt32) -> Void) {
        let n = Sys.epollWait(fd, events, capacity: capacity, timeoutMilliseconds: timeoutMilliseconds)
        for i in 0..<n { body(events[i].data.u64, events[i].events) }
    }
}
