import Access
import Server
import Loop
import Metrics
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `parley serve --workers N`: N worker processes share one port through SO_REUSEPORT, as nginx's
/// workers do, each with its own loops and its own descriptor limit. This process only supervises:
/// it starts them, restarts one that dies (with a back-off if it keeps dying), forwards SIGHUP
/// (certificate reload) and SIGTERM/SIGINT (graceful shutdown), and publishes its own figures
/// (workers running, restarts) beside theirs for the merged `/metrics`.
final class Supervisor {
    private struct Worker {
        var pid: pid_t = 0
        var startedAt = 0.0
        /// When to start it again after it died; nil while it runs.
        var restartAt: Double?
        var quickDeaths = 0
    }

    private let count: Int
    private let arguments: [String]
    private let shutdownTimeout: Double
    private let directory: String
    private var workers: [Worker]
    private let group: WorkerGroupMembership
    /// The supervisor's own series, published beside the workers' for the merged /metrics.
    private let metrics = MetricsRegistry()
    private let restarts: MetricFamily
    /// Each running worker's index and pid, as the last `publish` saw them, for the scrape.
    private final class Roster: Sendable {
        let running = Mutex<[(index: Int, pid: pid_t)]>([])
    }
    private let roster = Roster()
    /// The tenants' count the workers share (`WorkerTenantTable`); a dead worker's column is cleared.
    private let tenants: WorkerTenantTable

    /// `arguments`: the serve arguments each worker gets, without --workers and --port, which the
    /// supervisor sets.
    /// `figures`: more of the supervisor's own series to publish (the speech helper's, which it runs).
    init(count: Int, arguments: [String], shutdownTimeout: Double, figures: [MetricsRegistry] = []) throws {
        self.count = count
        self.arguments = arguments
        self.shutdownTimeout = shutdownTimeout
        directory = try Sys.makeTemporaryDirectory(prefix: "parley-workers-")
        workers = Array(repeating: Worker(), count: count)
        group = WorkerGroupMembership(directory: directory, name: "supervisor")
        tenants = try WorkerTenantTable.create(Self.tenantTablePath(directory), workers: count)
        restarts = MetricFamily(name: "parley_worker_restarts_total", help: "Workers started again after they died.", registry: metrics)
        for registry in figures { metrics.include(registry) }
        let roster = roster, count = count
        _ = ComputedFamily(name: "parley_workers", help: "Worker processes of parley serve --workers, by state.", kind: .gauge, registry: metrics) { samples in
            samples.add(WorkerState.running, roster.running.withLock(\.count))
            samples.add(WorkerState.configured, count)
        }
        _ = ComputedFamily(name: "parley_worker_info", help: "Each running worker's process id.", kind: .gauge, registry: metrics) { samples in
            for (index, pid) in roster.running.withLock({ $0 }) { samples.add(WorkerLabel(index), ProcessIDLabel(pid), 1) }
        }
    }

    static func tenantTablePath(_ directory: String) -> String { "\(directory)/tenants" }

    /// `worker-3` → 3: the worker's column in the tenants' table.
    static func workerIndex(_ name: String) -> Int? {
        name.hasPrefix("worker-") ? Int(name.dropFirst("worker-".count)) : nil
    }

    /// A port for the workers: the given one, or for 0 a free one, found by binding and letting go.
    static func concretePort(host: String, port: Int) throws -> Int {
        guard port == 0 else { return port }
        guard let address = try Sys.resolve(host: host, port: 0, passive: true).first else { throw SystemError("getaddrinfo(\(host))", errno: EINVAL) }
        let fd = try Sys.streamSocket(family: address.family, .blocking)
        defer { Sys.close(fd) }
        try Sys.bind(fd, to: address)
        return try Sys.localAddress(fd).port
    }

    /// Starts the workers, waits until each has published its first figures (it is listening), and
    /// calls `ready`; then supervises until SIGTERM or SIGINT, and returns once every worker is gone.
    func run(ready: () -> Void) throws {
        let signals = Sys.blockSignals([SIGINT, SIGTERM, SIGHUP, SIGCHLD])
        defer { Directory.removeFlat(directory) }

        for index in 0..<count { try start(index) }
        guard waitForWorkers() else {
            stopAll(SIGKILL)
            throw SystemError("the workers did not start (see their messages above)", errno: ECHILD)
        }
        publish()
        ready()

        while true {
            let received = Sys.waitForSignal(signals, timeoutSeconds: 0.25)
            if received == SIGINT || received == SIGTERM { break }
            if received == SIGHUP { forward(SIGHUP) }
            reap()
            try restartDue()
            publish()
        }
        forward(SIGTERM)
        waitForExit(deadline: now() + shutdownTimeout + 5)
    }

    // MARK: Workers

    private func start(_ index: Int) throws {
        // This very executable (/proc/self/exe), so the workers are the same build.
        let argv = [CommandLine.arguments[0], "serve"] + arguments
            + ["--worker-dir", directory, "--worker-name", "worker-\(index)"]
        setenv("PARLEY_SUPERVISOR_PID", String(getpid()), 1)
        // Each worker shares the tenants' limits with the others (`Serve.sharedTenantCount`).
        setenv("PARLEY_WORKERS", String(count), 1)
        // The child starts with the signals unblocked and at their defaults (Sys.spawnSelf).
        let pid = try Sys.spawnSelf(argv)
        workers[index].pid = pid
        workers[index].startedAt = now()
        workers[index].restartAt = nil
    }

    /// Until every worker has written its metrics file (it does so once listening), or one exits.
    private func waitForWorkers() -> Bool {
        let deadline = now() + 30
        while now() < deadline {
            let ready = (0..<count).filter { access("\(directory)/worker-\($0).prom", F_OK) == 0 }.count
            if ready == count { return true }
            var status: Int32 = 0
            if waitpid(-1, &status, WNOHANG) > 0 { return false }
            usleep(20_000)
        }
        return false
    }

    /// Collects workers that exited and schedules their restart: at once the first time, then
    /// with a back-off doubling up to 30 s while they keep dying within a second of starting.
    private func reap() {
        var status: Int32 = 0
        while case let pid = waitpid(-1, &status, WNOHANG), pid > 0 {
            guard let index = workers.firstIndex(where: { $0.pid == pid }) else { continue }
            let lived = now() - workers[index].startedAt
            workers[index].quickDeaths = lived < 1 ? workers[index].quickDeaths + 1 : 0
            let delay = workers[index].quickDeaths == 0 ? 0 : min(30, 0.5 * Double(1 << min(6, workers[index].quickDeaths)))
            workers[index].pid = 0
            workers[index].restartAt = now() + delay
            tenants.clear(worker: index)
            unlink("\(directory)/worker-\(index).prom")
            let how = status & 0x7F == 0 ? "exited with \((status >> 8) & 0xFF)" : "was killed by signal \(status & 0x7F)"
            printError("parley: worker \(index) (pid \(pid)) \(how); restarting it\(delay > 0 ? " in \(delay) s" : "")")
        }
    }

    private func restartDue() throws {
        for index in 0..<count {
            guard let at = workers[index].restartAt, now() >= at else { continue }
            try start(index)
            restarts.add(1)
        }
    }

    private func forward(_ signal: Int32) {
        for worker in workers where worker.pid > 0 { kill(worker.pid, signal) }
    }

    private func stopAll(_ signal: Int32) {
        forward(signal)
        waitForExit(deadline: now() + 5)
    }

    /// Waits for every worker to exit; past the deadline, kills what is left.
    private func waitForExit(deadline: Double) {
        var status: Int32 = 0
        while workers.contains(where: { $0.pid > 0 }) {
            let pid = waitpid(-1, &status, WNOHANG)
            if pid > 0, let index = workers.firstIndex(where: { $0.pid == pid }) { workers[index].pid = 0; continue }
            if pid < 0 { break }
            if now() >= deadline { forward(SIGKILL) }
            usleep(20_000)
        }
    }

    // MARK: Figures

    private func publish() {
        roster.running.withLock { $0 = workers.enumerated().filter { $0.element.pid > 0 }.map { ($0.offset, $0.element.pid) } }
        group.publish(metrics.render())
    }

    private func now() -> Double { Double(MonotonicClock.nanoseconds()) / 1e9 }
}
