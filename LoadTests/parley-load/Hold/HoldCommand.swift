import JSON
import ArgumentParser
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load hold N`: open N WebSocket sessions, hold them, and report what they cost the
/// server. The sessions are spread over child processes because one process may hold only as many
/// sockets as its descriptor limit (20,000 here, hard) allows.
struct HoldCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hold",
        abstract: "Open N WebSocket sessions, hold them open, and report the server's memory per connection.",
        discussion: """
            Connections are made by child processes (each at most \(Self.perProcess) by default), each \
            from source addresses 127.0.0.2, 127.0.0.3, … so that ephemeral ports do not run out. The \
            held sessions answer the server's pings. Exit status 0 only if all N connected and were \
            still open at the end.
            """)

    /// Sessions one worker holds by default: well under the hard descriptor limit of 20,000, with
    /// room for a second run's sockets still closing.
    static let perProcess = 9000

    @Argument(help: "Sessions to open and hold.")
    var count: Int

    @Option(help: "WebSocket endpoint; loopback addresses only.")
    var url = "ws://127.0.0.1:8080/echo"

    @Option(help: "PEM CA certificates trusted for a wss:// URL, besides the system store.")
    var ca: String?

    @Option(help: "Read the server's memory from /proc/PID rather than its /metrics: for servers without Parley's metrics (the peers of `compare`).")
    var serverPid: Int32?

    @Option(help: "Worker processes (default: enough that each holds at most \(Self.perProcess); at least 2 above that).")
    var processes: Int?

    @Option(help: "Source addresses to connect from: 127.0.0.2 up to 127.0.0.(1 + K).")
    var sources = 16

    @Option(help: "Seconds to hold the sessions once they are open.")
    var holdSeconds = 10.0

    @Option(help: "Seconds allowed for every session to open.")
    var connectTimeout = 60.0

    @Option(help: "Connections started per second, per process.")
    var rate = 5000.0

    @Option(help: "Also write the summary as JSON to this file.")
    var json: String?

    func validate() throws {
        guard count >= 1 else { throw ValidationError("N must be at least 1") }
        if let processes { guard (1...count).contains(processes) else { throw ValidationError("--processes must be 1...N") } }
        guard (1...253).contains(sources) else { throw ValidationError("--sources must be 1...253 (127.0.0.2 to 127.0.0.254)") }
        guard holdSeconds >= 0, holdSeconds <= 86_400 else { throw ValidationError("--hold-seconds must be 0...86400") }
        guard connectTimeout > 0, connectTimeout <= 3600 else { throw ValidationError("--connect-timeout must be in (0, 3600]") }
        guard rate > 0 else { throw ValidationError("--rate must be positive") }
    }

    /// ceil(N / 9000), and never one process above 9000.
    static func defaultProcesses(for count: Int) -> Int {
        count <= perProcess ? 1 : max(2, (count + perProcess - 1) / perProcess)
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let target = try LoadTarget(url, caFile: ca)
        let limit = DescriptorLimit.raiseToHard()
        let processes = self.processes ?? Self.defaultProcesses(for: count)
        let largestShare = (count + processes - 1) / processes
        // A worker needs a few descriptors besides its sockets: epoll, pipes, stdio.
        guard largestShare + 32 <= limit else {
            throw LoadFailure("each of \(processes) processes would hold \(largestShare) sockets, over the descriptor limit of \(limit); use --processes \((count + limit - 33) / (limit - 32)) or more")
        }

        var summary = HoldSummary(target: target, requested: count, processes: processes, sources: sources, rate: rate, holdSeconds: holdSeconds)
        let figures = serverPid.map(ProcessFigures.init)
        let startupResident = figures?.residentBytes ?? 0
        /// The server's figures now: from /metrics, or from /proc for a server without them.
        func server(open: Int) throws(ServerMetrics.Unreachable) -> ServerMetrics {
            guard let figures else { return try Self.settledMetrics(target, open: open) }
            return try figures.metrics(sessions: open, startupResident: startupResident)
        }
        do {
            summary.serverBefore = try server(open: 0)
        } catch {
            throw LoadFailure.unreachable(error, target)
        }
        if let serverPid { summary.notes.append("server figures from /proc/\(serverPid), not /metrics; its sessions are those the clients hold") }
        print("parley-load hold: \(Format.grouped(count)) sessions to \(target) from \(processes) process\(processes == 1 ? "" : "es"), \(sources) source addresses, \(Format.grouped(Int(rate))) conn/s per process")
        if let before = summary.serverBefore, before.sessionsOpen > 0 {
            summary.notes.append("the server already had \(Format.grouped(before.sessionsOpen)) WebSocket sessions open before this run")
        }
        Console.flush()

        let startedAt = MonotonicClock.nanoseconds()
        let group = try WorkerGroup(arguments: workerArguments(processes: processes))
        let progress = Progress()

        summary.connect = waitForConnections(group, progress, startedAt: startedAt)
        summary.connectSeconds = group.workers.map { worker in
            // Each worker times from its own first connect; place that on the parent's clock.
            Double(worker.spawnedAt - startedAt) / 1e9 + (worker.latest.map { HoldReport(json: $0).connectSeconds } ?? 0)
        }.max() ?? 0
        summary.cpuAtConnect = CPUTime.ofSelf() + summary.connect.cpu
        do {
            summary.serverConnected = try server(open: summary.connect.open)
        } catch {
            summary.problems.append("could not read the server's metrics once connected: \(error)")
        }
        print(summary.connectSection)
        Console.flush()

        summary.heldSeconds = hold(group, progress, target: target)
        do {
            summary.serverAfterHold = try server(open: Self.merge(group).open)
        } catch {
            summary.problems.append("could not read the server's metrics after the hold: \(error)")
        }

        let vanishedEarly = group.vanished
        // Closing takes time at large counts (every session gets a close frame, and the server and
        // the clients share two cores): about a second per 10,000 sessions is allowed, 10 s at least.
        let signalled = group.stop(graceSeconds: max(10, Double(count) / 10_000))
        summary.atEnd = Self.merge(group)
        summary.cpuTotal = CPUTime.ofSelf() + CPUTime.ofWaitedChildren()
        judge(&summary, vanished: vanishedEarly, signalled: signalled, reports: group.workers.map(\.latest))
        if let json {
            do { try TextFile.write(summary.json.pretty, to: json) } catch { summary.problems.append("\(error)") }
        }
        print(summary.holdSection)
        if !summary.passed { throw ExitCode.failure }
    }

    /// Until every worker has settled (each connection open or failed), bounded by the connect
    /// timeout plus a grace for the workers' own start-up and last report. Returns their reports, added.
    private func waitForConnections(_ group: WorkerGroup, _ progress: Progress, startedAt: UInt64) -> HoldReport {
        let bound = startedAt + MonotonicClock.nanoseconds(connectTimeout + 10)
        var meter = RateMeter()
        var merged = HoldReport()
        var connecting = true
        while connecting {
            group.pump(timeoutMilliseconds: 100)
            merged = Self.merge(group)
            connecting = !merged.settled && group.vanished.isEmpty && MonotonicClock.nanoseconds() < bound
            let elapsed = MonotonicClock.seconds(since: startedAt)
            let perSecond = meter.sample(merged.connected + merged.failedCount, at: elapsed)
            progress.update("connecting  \(Format.grouped(merged.connected))/\(Format.grouped(count))  failed \(Format.grouped(merged.failedCount))  \(Format.grouped(Int(perSecond))) conn/s  \(Format.fixed(elapsed, 1)) s",
                            force: !connecting)
        }
        progress.finish()
        return merged
    }

    /// Keeps reading the workers' reports for --hold-seconds, so that drops show as they happen.
    /// Returns the seconds actually held (less if every worker died).
    private func hold(_ group: WorkerGroup, _ progress: Progress, target: LoadTarget) -> Double {
        let start = MonotonicClock.nanoseconds()
        let end = start + MonotonicClock.nanoseconds(holdSeconds)
        if holdSeconds > 0 {
            print("\nholding for \(Format.fixed(holdSeconds, 1)) s ...")
            Console.flush()
        }
        let server = ServerMemoryMeter(target: target, pid: serverPid)
        while MonotonicClock.nanoseconds() < end && group.vanished.isEmpty {
            group.pump(timeoutMilliseconds: 100)
            let now = Self.merge(group)
            progress.update("holding  open \(Format.grouped(now.open))/\(Format.grouped(count))  dropped \(Format.grouped(now.droppedCount))\(server.line())  \(Format.fixed(MonotonicClock.seconds(since: start), 1))/\(Format.fixed(holdSeconds, 1)) s",
                            force: MonotonicClock.nanoseconds() >= end)
        }
        server.finish()
        progress.finish()
        return MonotonicClock.seconds(since: start)
    }

    /// The worker command lines: each its share of the N, and where its share starts.
    private func workerArguments(processes: Int) -> [[String]] {
        var first = 0
        return (0..<processes).map { i in
            let share = count / processes + (i < count % processes ? 1 : 0)
            defer { first += share }
            return ["hold-worker", "--url", url, "--count", String(share), "--first-index", String(first),
                    "--sources", String(sources), "--rate", String(rate), "--connect-timeout", String(connectTimeout),
                    // A worker outlives no parent by much: connect, hold, and a margin.
                    "--max-seconds", String(connectTimeout + holdSeconds + 60)] + (ca.map { ["--ca", $0] } ?? [])
        }
    }

    /// The server's metrics once they show the sessions the clients hold. With `--workers`, the
    /// other workers' figures reach /metrics up to 250 ms late; a single process is current at once.
    static func settledMetrics(_ target: LoadTarget, open: Int) throws(ServerMetrics.Unreachable) -> ServerMetrics {
        var metrics = try ServerMetrics.fetch(from: target)
        for _ in 0..<10 where metrics.workers > 1 && metrics.sessionsOpen != open {
            usleep(200_000)
            metrics = try ServerMetrics.fetch(from: target)
        }
        return metrics
    }

    private static func merge(_ group: WorkerGroup) -> HoldReport {
        var total = HoldReport()
        total.settled = true
        for report in group.latestReports {
            guard let report else { total.settled = false; continue }
            total.add(HoldReport(json: report))
        }
        return total
    }

    /// Decides pass or fail, and says why.
    private func judge(_ summary: inout HoldSummary, vanished: [WorkerProcess], signalled: [WorkerProcess], reports: [JSON?]) {
        for worker in vanished {
            summary.problems.append("worker \(worker.index) (pid \(worker.pid)) stopped early: \(worker.exitDescription)")
        }
        for worker in signalled {
            summary.notes.append("worker \(worker.index) had to be signalled to stop")
        }
        if reports.contains(where: { $0?["kind"]?.string != "final" }) {
            summary.problems.append("not every worker sent its final report")
        }
        let connect = summary.connect
        if connect.connected < count {
            summary.problems.append("only \(Format.grouped(connect.connected)) of \(Format.grouped(count)) sessions connected (failures: \(Format.reasons(connect.failed)))")
        }
        if summary.atEnd.droppedCount > 0 {
            summary.problems.append("\(Format.grouped(summary.atEnd.droppedCount)) sessions were lost after opening (\(Format.reasons(summary.atEnd.dropped)))")
        } else if summary.atEnd.open < connect.connected {
            summary.problems.append("only \(Format.grouped(summary.atEnd.open)) sessions were open at the end")
        }
        if let held = summary.serverHeld(summary.serverAfterHold), held < count {
            summary.problems.append("the server reports only \(Format.grouped(held)) of \(Format.grouped(count)) WebSocket sessions open at the end")
        }
    }
}

/// Connections per second over about the last second, from a cumulative count.
struct RateMeter {
    private var samples: [(seconds: Double, count: Int)] = []

    mutating func sample(_ count: Int, at seconds: Double) -> Double {
        samples.append((seconds, count))
        while samples.count > 2 && seconds - samples[0].seconds > 1.0 { samples.removeFirst() }
        guard let first = samples.first, seconds > first.seconds else { return 0 }
        // Until the window spans half a second, the average since the start says more.
        guard seconds - first.seconds >= 0.5 else { return Double(count) / seconds }
        return Double(count - first.count) / (seconds - first.seconds)
    }
}
