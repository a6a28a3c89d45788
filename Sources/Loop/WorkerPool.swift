import Synchronization
import Metrics
#if canImport(Glibc)
import Glibc
#endif

/// Threads for work too heavy for an event loop (speech recognition, synthesis, encoding a
/// sentence of audio): a loop hands a job over with `EventLoop.offload`, and the result comes back
/// to that loop through its inbox. The queue is bounded: when it is full, `submit` says no at once,
/// so an overloaded server refuses new work (an `overloaded` error to that session) instead of
/// letting every session's audio wait behind it.
public final class WorkerPool: Sendable {
    public typealias Job = @Sendable () -> Void

    public let name: String
    public let threads: Int
    public let queueLimit: Int
    private let queue: Mutex<Queue>
    /// Counts jobs waiting; each worker sleeps on it.
    private let waiting: Semaphore
    /// Jobs refused because the queue was full, for /metrics.
    let refused = Counter()

    private struct Queue: ~Copyable {
        var jobs: [Job?] = []
        var head = 0
        var stopping = false
        var running = 0

        var count: Int { jobs.count - head }

        mutating func take() -> Job? {
            guard head < jobs.count else { return nil }
            let job = jobs[head]
            jobs[head] = nil
            head += 1
            // Compact once the taken front is the larger part, so the array does not creep.
            if head > 64 && head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    public init(name: String, threads: Int, queueLimit: Int) throws(SystemError) {
        self.name = name
        self.threads = max(1, threads)
        self.queueLimit = max(1, queueLimit)
        queue = Mutex(Queue())
        waiting = Semaphore()
        for i in 0..<self.threads {
            _ = try Thread.spawn(name: "\(name)-\(i)") { [self] in work() }
        }
    }

    /// Queues `job`; false (and the job dropped) when `queueLimit` jobs are already waiting.
    public func submit(_ job: @escaping Job) -> Bool {
        let accepted = queue.withLock { q -> Bool in
            guard !q.stopping, q.count < queueLimit else { return false }
            q.jobs.append(job)
            return true
        }
        if accepted { waiting.signal() } else { refused.add(1) }
        return accepted
    }

    /// Jobs waiting, not counting those running.
    public var depth: Int { queue.withLock { $0.count } }
    /// Jobs running now.
    public var busy: Int { queue.withLock { $0.running } }

    /// Lets the workers finish the jobs queued and exit; later submissions are refused.
    public func stop() {
        queue.withLock { $0.stopping = true }
        for _ in 0..<threads { waiting.signal() }
    }

    private func work() {
        while true {
            waiting.wait()
            let next = queue.withLock { q -> (job: Job?, exit: Bool) in
                if let job = q.take() {
                    q.running += 1
                    return (job, false)
                }
                return (nil, q.stopping)
            }
            if next.exit { return }
            guard let job = next.job else { continue }
            job()
            queue.withLock { $0.running -= 1 }
        }
    }
}

/// A counting semaphore (POSIX), for worker threads to sleep on.
final class Semaphore: @unchecked Sendable {
    // sem_t must not move: it lives in its own allocation. sem_post and sem_wait are thread-safe.
    private let sem: UnsafeMutablePointer<sem_t>

    init() {
        sem = .allocate(capacity: 1)
        sem_init(sem, 0, 0)
    }

    deinit {
        sem_destroy(sem)
        sem.deallocate()
    }

    func signal() { sem_post(sem) }

    func wait() {
        while sem_wait(sem) != 0 && errno == EINTR {}
    }
}
