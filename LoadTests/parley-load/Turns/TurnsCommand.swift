import JSON
import ArgumentParser
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load turns N`: N Realtime sessions, each sending a text turn every few seconds, with the
/// replies timed from the client and the server's own latency histograms read from /metrics. The
/// sessions are spread over child processes, as `hold` spreads them, and every process starts the
/// schedule at the same instant, which the parent names once all of them are connected.
struct TurnsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "turns",
        abstract: "Open N Realtime sessions and have each send a text turn every interval; time the replies.",
        discussion: """
            Each session connects, waits for session.created, and then every --turn-interval seconds \
            (at its own phase, so the turns arrive evenly) sends conversation.item.create with \
            "hello number K" and response.create. With --tools K, each session first sends one \
            session.update declaring K function tools (the same K in every session: get_weather, \
            book_table, search_flights, …, each with a JSON Schema of 2 to 4 properties) and waits \
            for its session.updated; the turns name none of the tools, so the replies stay text, and \
            the report gives the server's memory per session to set beside a run without tools. \
            The client times the first \
            response.output_text.delta and response.done from the response.create; the server's \
            parley_server_added_latency_seconds and parley_upstream_first_token_seconds are read \
            from /metrics at the start and the end of the measured period. Sessions come from child \
            processes (at most \(HoldCommand.perProcess) each) on source addresses 127.0.0.2, \
            127.0.0.3, …. Exit status 0 only if every session opened and every measured turn \
            completed without an error.
            """)

    static let sources = 16
    /// Connections started per second, per process.
    static let connectRate = 5000.0

    @Argument(help: "Sessions to open.")
    var count: Int

    @Option(help: "Realtime endpoint; loopback addresses only.")
    var url = "ws://127.0.0.1:8080/v1/realtime"

    @Option(help: "PEM CA certificates trusted for a wss:// URL, besides the system store.")
    var ca: String?

    @Option(help: "Worker processes (default: enough that each holds at most \(HoldCommand.perProcess); at least 2 above that).")
    var processes: Int?

    @Option(help: "Seconds between one session's turns.")
    var turnInterval = 5.0

    @Option(help: "Seconds measured, after the warm-up.")
    var duration = 20.0

    @Option(help: "Seconds of turns before measuring starts (default: one turn interval, so that every session's first turn, and the server's first upstream connections, fall outside it).")
    var warmup: Double?

    @Option(help: "Seconds allowed for every session to open and send session.created (and session.updated, with --tools).")
    var connectTimeout = 60.0

    @Option(help: "Function tools each session declares in a session.update before its first turn: the same first K of a fixed catalogue of \(TurnsTools.maxCount) for every session (0: no session.update).")
    var tools = 0

    @Option(help: "Also write the summary as JSON to this file.")
    var json: String?

    func validate() throws {
        guard count >= 1 else { throw ValidationError("N must be at least 1") }
        let processes = self.processes ?? HoldCommand.defaultProcesses(for: count)
        guard (1...count).contains(processes) else { throw ValidationError("--processes must be 1...N") }
        guard (count + processes - 1) / processes <= HoldCommand.perProcess else {
            throw ValidationError("at most \(HoldCommand.perProcess) sessions per process: use --processes \((count + HoldCommand.perProcess - 1) / HoldCommand.perProcess) or more")
        }
        guard turnInterval > 0, turnInterval <= 3600 else { throw ValidationError("--turn-interval must be in (0, 3600]") }
        guard duration > 0, duration <= 3600 else { throw ValidationError("--duration must be in (0, 3600]") }
        if let warmup { guard warmup >= 0, warmup <= 3600 else { throw ValidationError("--warmup must be 0...3600") } }
        guard connectTimeout > 0, connectTimeout <= 3600 else { throw ValidationError("--connect-timeout must be in (0, 3600]") }
        guard (0...TurnsTools.maxCount).contains(tools) else { throw ValidationError("--tools must be 0...\(TurnsTools.maxCount)") }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let target = try LoadTarget(url, caFile: ca)
        let limit = DescriptorLimit.raiseToHard()
        let processes = self.processes ?? HoldCommand.defaultProcesses(for: count)
        let warmup = self.warmup ?? turnInterval
        let largestShare = (count + processes - 1) / processes
        guard largestShare + 32 <= limit else {
            throw LoadFailure("each of \(processes) processes would hold \(largestShare) sockets, over the descriptor limit of \(limit); use --processes \((count + limit - 33) / (limit - 32)) or more")
        }

        var summary = TurnsSummary(target: target, requested: count, processes: processes, sources: Self.sources,
                                   turnInterval: turnInterval, warmup: warmup, duration: duration, tools: tools)
        do {
            summary.serverBefore = try ServerMetrics.fetch(from: target)
        } catch {
            throw LoadFailure.unreachable(error, target)
        }
        print("parley-load turns: \(Format.grouped(count)) sessions to \(target) from \(processes) process\(processes == 1 ? "" : "es"), a turn every \(Format.fixed(turnInterval, 1)) s each (\(Format.fixed(Double(count) / turnInterval, 1)) turns/s), \(Format.fixed(warmup, 1)) s warm-up + \(Format.fixed(duration, 1)) s\(tools > 0 ? "; \(tools) function tools declared per session" : "")")
        if let before = summary.serverBefore, before.realtimeOpen > 0 {
            summary.notes.append("the server already had \(Format.grouped(before.realtimeOpen)) realtime sessions open before this run")
        }
        Console.flush()

        let startedAt = MonotonicClock.nanoseconds()
        let group = try WorkerGroup(arguments: workerArguments(processes: processes, warmup: warmup))
        let progress = Progress()

        summary.connect = waitUntilReady(group, progress, startedAt: startedAt)
        summary.connectSeconds = group.workers.map { worker in
            // Each worker times from its own first connect; place that on the parent's clock.
            Double(worker.spawnedAt - startedAt) / 1e9 + (worker.latest.map { TurnsReport(json: $0).connectSeconds } ?? 0)
        }.max() ?? 0
        do {
            summary.serverConnected = try ServerMetrics.fetch(from: target)
        } catch {
            summary.problems.append("could not read the server's metrics once connected: \(error)")
        }
        print(summary.connectSection)
        Console.flush()

        if summary.connect.phase >= .ready && summary.connect.ready > 0 {
            runTurns(group, progress, target: target, warmup: warmup, summary: &summary)
        } else {
            summary.problems.append(group.vanished.isEmpty ? "no session was ready to take turns" : "a worker stopped while connecting")
        }

        let vanishedEarly = group.vanished
        let signalled = group.stop(graceSeconds: 10)
        summary.atEnd = Self.merge(group)
        summary.cpuTotal = CPUTime.ofSelf() + CPUTime.ofWaitedChildren()
        judge(&summary, vanished: vanishedEarly, signalled: signalled, reports: group.workers.map(\.latest))
        if let json {
            do { try TextFile.write(summary.json.pretty, to: json) } catch { summary.problems.append("\(error)") }
        }
        print(summary.turnsSection)
        if !summary.passed { throw ExitCode.failure }
    }

    /// Until every worker has every session open (or failed) and has heard session.created on the
    /// open ones, bounded by the connect timeout plus a grace for start-up. Returns their reports, added.
    private func waitUntilReady(_ group: WorkerGroup, _ progress: Progress, startedAt: UInt64) -> TurnsReport {
        let bound = startedAt + MonotonicClock.nanoseconds(connectTimeout + 10)
        var meter = RateMeter()
        var merged = TurnsReport()
        var connecting = true
        while connecting {
            group.pump(timeoutMilliseconds: 100)
            merged = Self.merge(group)
            connecting = merged.phase < .ready && group.vanished.isEmpty && MonotonicClock.nanoseconds() < bound
            let elapsed = MonotonicClock.seconds(since: startedAt)
            let perSecond = meter.sample(merged.connected + merged.failedCount, at: elapsed)
            progress.update("connecting  \(Format.grouped(merged.connected))/\(Format.grouped(count))  \(tools > 0 ? "session.updated" : "session.created") \(Format.grouped(merged.ready))  failed \(Format.grouped(merged.failedCount))  \(Format.grouped(Int(perSecond))) conn/s  \(Format.fixed(elapsed, 1)) s",
                            force: !connecting)
        }
        progress.finish()
        return merged
    }

    /// Names the start to every worker, scrapes the server as the measured period begins, and
    /// waits for every worker to drain its replies; then scrapes again.
    private func runTurns(_ group: WorkerGroup, _ progress: Progress, target: LoadTarget, warmup: Double, summary: inout TurnsSummary) {
        // A little ahead, so that every worker has read the line before the first turn is due.
        let start = MonotonicClock.nanoseconds() + 100_000_000
        for worker in group.workers { worker.send(line: "start \(start)") }
        let measureStart = start + MonotonicClock.nanoseconds(warmup)
        let measureEnd = measureStart + MonotonicClock.nanoseconds(duration)
        let bound = measureEnd + MonotonicClock.nanoseconds(TurnsRun.drainSeconds + 10)
        print("\nturns: \(Format.fixed(warmup, 1)) s warm-up, then \(Format.fixed(duration, 1)) s measured ...")
        Console.flush()

        var cpuAtStart: CPUTime?
        var parentCPU = CPUTime.zero
        var merged = Self.merge(group)
        while merged.phase < .drained && group.vanished.isEmpty && MonotonicClock.nanoseconds() < bound {
            group.pump(timeoutMilliseconds: 100)
            let now = MonotonicClock.nanoseconds()
            if cpuAtStart == nil && now >= measureStart {
                cpuAtStart = .ofSelf()
                do {
                    summary.serverStart = try ServerMetrics.fetch(from: target)
                } catch {
                    summary.problems.append("could not read the server's metrics as measuring began: \(error)")
                }
            }
            if let cpu = cpuAtStart, now >= measureEnd, parentCPU == .zero { parentCPU = .ofSelf() - cpu }
            merged = Self.merge(group)
            let elapsed = Double(Int64(bitPattern: now &- measureStart)) / 1e9
            let perSecond = Self.turnRate(group, from: start, to: measureEnd)
            let phase = merged.phase.rawValue
            let clock = elapsed < 0 ? "\(Format.fixed(-elapsed, 1)) s to measuring" : "\(Format.fixed(min(elapsed, duration), 1))/\(Format.fixed(duration, 1)) s"
            progress.update("\(phase)  open \(Format.grouped(merged.open))/\(Format.grouped(count))  \(Format.grouped(Int(perSecond.rounded()))) turns/s  in flight \(Format.grouped(merged.inFlight))  replies \(Format.grouped(merged.responsesDone))  \(clock)",
                            force: merged.phase == .drained)
        }
        progress.finish()
        do {
            summary.serverEnd = try ServerMetrics.fetch(from: target)
        } catch {
            summary.problems.append("could not read the server's metrics after the turns: \(error)")
        }
        var workersCPU = CPUTime.zero
        for report in group.latestReports.compactMap({ $0 }) { workersCPU = workersCPU + TurnsReport(json: report).result.cpuMeasured }
        summary.cpuMeasured = workersCPU + parentCPU
    }

    /// Turns sent a second since the schedule started (none are sent after `end`): each worker's
    /// count over the time to its own report, added. Steady under a steady schedule; a client
    /// falling behind shows as a rate under the schedule's.
    private static func turnRate(_ group: WorkerGroup, from start: UInt64, to end: UInt64) -> Double {
        group.latestReports.compactMap { $0.map(TurnsReport.init(json:)) }.reduce(0) { rate, report in
            let until = min(report.reportedAt, end)
            return until > start ? rate + Double(report.turnsSent) / (Double(until - start) / 1e9) : rate
        }
    }

    /// The worker command lines: each its share of the N, and where its share starts.
    private func workerArguments(processes: Int, warmup: Double) -> [[String]] {
        var first = 0
        return (0..<processes).map { i in
            let share = count / processes + (i < count % processes ? 1 : 0)
            defer { first += share }
            return ["turns-worker", "--url", url, "--count", String(share), "--first-index", String(first),
                    "--sources", String(Self.sources), "--rate", String(Self.connectRate),
                    "--connect-timeout", String(connectTimeout), "--turn-interval", String(turnInterval),
                    "--warmup", String(warmup), "--duration", String(duration), "--tools", String(tools),
                    // A worker outlives no parent by much: connect, turns, drain, and a margin.
                    "--max-seconds", String(connectTimeout + warmup + duration + TurnsRun.drainSeconds + 60)] + (ca.map { ["--ca", $0] } ?? [])
        }
    }

    /// The latest reports added; the phase is the slowest worker's, and `.connecting` while any
    /// worker has not reported.
    private static func merge(_ group: WorkerGroup) -> TurnsReport {
        var total = TurnsReport()
        total.phase = .drained
        for report in group.latestReports {
            guard let report else { total.phase = .connecting; continue }
            total.add(TurnsReport(json: report))
        }
        return total
    }

    /// Decides pass or fail, and says why.
    private func judge(_ summary: inout TurnsSummary, vanished: [WorkerProcess], signalled: [WorkerProcess], reports: [JSON?]) {
        for worker in vanished {
            summary.problems.append("worker \(worker.index) (pid \(worker.pid)) stopped early: \(worker.exitDescription)")
        }
        for worker in signalled {
            summary.notes.append("worker \(worker.index) had to be signalled to stop")
        }
        if reports.contains(where: { $0?["kind"]?.string != "final" }) {
            summary.problems.append("not every worker sent its final report")
        }
        let connect = summary.connect, r = summary.result
        if connect.connected < count {
            summary.problems.append("only \(Format.grouped(connect.connected)) of \(Format.grouped(count)) sessions connected (failures: \(Format.reasons(connect.failed)))")
        } else if connect.ready < connect.open {
            if connect.updateRefused > 0 {
                summary.problems.append("\(Format.grouped(connect.updateRefused)) sessions had their session.update (\(tools) tools) refused with an error (\(Format.reasons(r.errors)))")
            }
            let silent = connect.open - connect.ready - connect.updateRefused
            if silent > 0 {
                summary.problems.append("\(Format.grouped(silent)) sessions had no \(tools > 0 ? "session.updated" : "session.created") within the connect timeout")
            }
        }
        if summary.atEnd.droppedCount > 0 {
            summary.problems.append("\(Format.grouped(summary.atEnd.droppedCount)) sessions were lost after opening (\(Format.reasons(summary.atEnd.dropped)))")
        }
        if r.turns == 0 { summary.problems.append("no turn was measured") }
        if r.skippedBusy > 0 { summary.problems.append("\(Format.grouped(r.skippedBusy)) turns came due before the session's previous reply had finished") }
        if r.skippedClosed > 0 { summary.problems.append("\(Format.grouped(r.skippedClosed)) turns came due on closed sessions") }
        let notCompleted = r.turns - r.completed
        if notCompleted > 0 {
            summary.problems.append("\(Format.grouped(notCompleted)) of \(Format.grouped(r.turns)) measured turns did not complete (\(Format.reasons(r.statuses.filter { $0.key != "completed" }.merging(["refused": r.refused, "unanswered": r.unanswered, "lost": r.lostInFlight], uniquingKeysWith: +))))")
        }
        if r.errorCount > 0 { summary.problems.append("\(Format.grouped(r.errorCount)) error events (\(Format.reasons(r.errors)))") }
        if r.firstDelta.count < UInt64(r.completed) {
            summary.notes.append("\(Format.grouped(r.completed - Int(r.firstDelta.count))) completed responses had no response.output_text.delta")
        }
        for name in [TurnsSummary.addedLatency, TurnsSummary.firstToken] where summary.serverStart != nil && summary.serverEnd != nil && summary.serverHistogram(name) == nil {
            summary.notes.append("the server's /metrics has no \(name): reported as n/a")
        }
    }
}
