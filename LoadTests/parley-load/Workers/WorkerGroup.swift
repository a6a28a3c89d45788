import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// The parent's side of its workers: starting them, collecting their reports, and ending them
/// within a bounded time however they behave.
final class WorkerGroup {
    let workers: [WorkerProcess]

    /// Starts one worker per argument list.
    init(arguments: [[String]]) throws(WorkerProcess.SpawnFailure) {
        var started: [WorkerProcess] = []
        for (i, args) in arguments.enumerated() {
            do {
                started.append(try WorkerProcess(index: i, arguments: args))
            } catch {
                // Leave no half-started load behind.
                for worker in started {
                    worker.requestStop()
                    worker.terminate(SIGKILL)
                    for _ in 0..<100 where !worker.reap() { usleep(10_000) }
                }
                throw error
            }
        }
        workers = started
    }

    /// Waits up to `timeoutMilliseconds` for any worker to write, then reads from all of them.
    func pump(timeoutMilliseconds: Int32) {
        var entries = workers.filter { !$0.outputClosed }.map { pollfd(fd: $0.stdoutFD, events: Int16(POLLIN), revents: 0) }
        guard !entries.isEmpty else {
            usleep(UInt32(max(0, timeoutMilliseconds)) * 1000)
            return
        }
        _ = poll(&entries, nfds_t(entries.count), timeoutMilliseconds)
        for worker in workers { _ = worker.readReports() }
    }

    var latestReports: [JSON?] { workers.map(\.latest) }

    /// Workers whose output ended without a final report: they crashed or were killed.
    var vanished: [WorkerProcess] {
        workers.filter { $0.outputClosed && $0.latest?["kind"]?.string != "final" }
    }

    /// Asks every worker to finish, collects their final reports, and reaps them: SIGTERM after
    /// `graceSeconds`, SIGKILL a second later. Returns the workers that needed a signal.
    @discardableResult
    func stop(graceSeconds: Double) -> [WorkerProcess] {
        workers.forEach { $0.requestStop() }
        let deadline = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(graceSeconds)
        while MonotonicClock.nanoseconds() < deadline && !workers.allSatisfy({ $0.outputClosed && $0.reap() }) {
            pump(timeoutMilliseconds: 50)
        }
        var signalled: [WorkerProcess] = []
        for (signal, wait) in [(SIGTERM, 1.0), (SIGKILL, 5.0)] {
            let stubborn = workers.filter { !$0.reap() }
            if stubborn.isEmpty { break }
            stubborn.forEach { $0.terminate(signal) }
            signalled += stubborn.filter { s in !signalled.contains { $0 === s } }
            let until = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(wait)
            while MonotonicClock.nanoseconds() < until && !workers.allSatisfy({ $0.reap() }) { pump(timeoutMilliseconds: 20) }
        }
        return signalled
    }
}
