/// Work handed to a worker pool by `EventLoop.offload`. `cancel()` (on the loop) means the
/// completion will not run; the job itself, if already running, runs to its end.
public final class OffloadTicket {
    let id: UInt64
    private weak var loop: EventLoop?

    init(id: UInt64, loop: EventLoop) {
        self.id = id
        self.loop = loop
    }

    public func cancel() { loop?.forgetOffload(id) }
}

extension EventLoop {
    /// Runs `work` on `pool` and then `completion` with its result on this loop. nil when the
    /// pool's queue is full: the caller tells its client the server is overloaded.
    public func offload<Result: Sendable>(to pool: WorkerPool, _ work: @escaping @Sendable () -> Result,
                                          then completion: @escaping (Result) -> Void) -> OffloadTicket? {
        let id = nextOffloadID()
        let inbox = handle.inbox
        let accepted = pool.submit {
            inbox.post(.init(ticket: id, result: work()))
        }
        guard accepted else { return nil }
        registerOffload(id) { result in
            // Only `work`'s own result is ever delivered under this ticket.
            if let result = result as? Result { completion(result) }
        }
        return OffloadTicket(id: id, loop: self)
    }
}
