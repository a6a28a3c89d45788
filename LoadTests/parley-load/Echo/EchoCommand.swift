import JSON
import ArgumentParser
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load echo`: round-trip latency and throughput against the echo endpoint, in a closed
/// loop. With --processes above 1 the connections are split over child processes whose histograms
/// are merged, for when one client process cannot keep up with the server.
struct EchoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "echo",
        abstract: "Measure echo round trips: C connections, each sending a message and waiting for its echo.",
        discussion: "Exit status 0 only if every connection opened and no error occurred.")

    @Option(help: "WebSocket echo endpoint; loopback addresses only.")
    var url = "ws://127.0.0.1:8080/echo"

    @Option(help: "PEM CA certificates trusted for a wss:// URL, besides the system store.")
    var ca: String?

    @Option(help: "Connections, each with one message in flight.")
    var connections = 100

    @Option(help: "Seconds measured, after the warm-up.")
    var duration = 10.0

    @Option(help: "Message size in bytes.")
    var size = 32

    @Option(help: "Seconds of traffic before measuring starts.")
    var warmup = 1.0

    @Option(help: "Client processes sharing the connections.")
    var processes = 1

    @Option(help: "Messages per second per connection (paced, open to the clock); 0 for a closed loop, as fast as echoes come.")
    var rate = 0.0

    @Option(help: "Messages sent together in one write (each echoed on its own).")
    var batch = 1

    @Option(help: "Seconds allowed for every connection to open.")
    var connectTimeout = 30.0

    @Option(help: "The server's process id, for a server without Parley's /metrics (the peers of `compare`): skips the /metrics check.")
    var serverPid: Int32?

    @Option(help: "Also write the summary as JSON to this file.")
    var json: String?

    func validate() throws {
        guard connections >= 1 else { throw ValidationError("--connections must be at least 1") }
        guard (1...connections).contains(processes) else { throw ValidationError("--processes must be 1...connections") }
        guard (connections + processes - 1) / processes <= HoldCommand.perProcess else {
            throw ValidationError("at most \(HoldCommand.perProcess) connections per process: use --processes \((connections + HoldCommand.perProcess - 1) / HoldCommand.perProcess) or more")
        }
        // The server closes with 1009 above its --max-message-bytes, 1 MiB by default.
        guard (0...(1 << 20)).contains(size) else { throw ValidationError("--size must be 0...1048576") }
        guard duration > 0, duration <= 3600 else { throw ValidationError("--duration must be in (0, 3600]") }
        guard warmup >= 0, warmup <= 600 else { throw ValidationError("--warmup must be 0...600") }
        guard connectTimeout > 0, connectTimeout <= 3600 else { throw ValidationError("--connect-timeout must be in (0, 3600]") }
        guard rate >= 0, rate <= 100_000 else { throw ValidationError("--rate must be 0...100000") }
        guard (1...256).contains(batch) else { throw ValidationError("--batch must be 1...256") }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let target = try LoadTarget(url, caFile: ca)
        DescriptorLimit.raiseToHard()
        // Reachable? A server without /metrics (a peer, given by --server-pid) is checked by the
        // echo connections themselves.
        if serverPid == nil {
            do {
                _ = try ServerMetrics.fetch(from: target)
            } catch {
                throw LoadFailure.unreachable(error, target)
            }
        }
        print("parley-load echo: \(Format.grouped(connections)) connections to \(target), \(size)-byte messages, \(Format.fixed(warmup, 1)) s warm-up + \(Format.fixed(duration, 1)) s, \(processes) process\(processes == 1 ? "" : "es")\(rate > 0 ? ", \(Format.fixed(rate, 0)) msg/s each" : "")\(batch > 1 ? " in batches of \(batch)" : "")")
        Console.flush()

        let progress = Progress()
        var problems: [String] = []
        let result = processes == 1
            ? try runHere(target, progress)
            : try runInWorkers(progress, problems: &problems)
        progress.finish()

        if result.opened < result.connections { problems.append("only \(Format.grouped(result.opened)) of \(Format.grouped(result.connections)) connections opened") }
        if result.errors > 0 { problems.append("\(Format.grouped(result.errors)) errors") }
        if result.messages == 0 { problems.append("no round trip was measured") }
        var summary = EchoSummary(
            target: target, processes: processes, size: size, warmup: warmup, result: result,
            cpuTotal: CPUTime.ofSelf() + CPUTime.ofWaitedChildren())
        summary.problems = problems
        print(summary.text)
        if let json { try TextFile.write(summary.json.pretty, to: json) }
        if !summary.passed { throw ExitCode.failure }
    }

    private func runHere(_ target: LoadTarget, _ progress: Progress) throws -> EchoResult {
        let run = try EchoRun(.init(
            target: target, connections: connections, firstIndex: 0, size: size,
            warmup: warmup, duration: duration, connectTimeout: connectTimeout, rate: rate, batch: batch, serverPid: serverPid))
        let startedAt = MonotonicClock.nanoseconds()
        var meter = RateMeter()
        return run.run(hangUpFD: nil) { report in
            progress.update(Self.progressLine([report], meter: &meter, startedAt: startedAt, connections: connections))
        }
    }

    private func runInWorkers(_ progress: Progress, problems: inout [String]) throws -> EchoResult {
        var first = 0
        let group = try WorkerGroup(arguments: (0..<processes).map { i in
            let share = connections / processes + (i < connections % processes ? 1 : 0)
            defer { first += share }
            return ["echo-worker", "--url", url, "--connections", String(share), "--first-index", String(first),
                    "--size", String(size), "--warmup", String(warmup), "--duration", String(duration),
                    "--connect-timeout", String(connectTimeout), "--rate", String(rate), "--batch", String(batch)] + (ca.map { ["--ca", $0] } ?? [])
                + (serverPid.map { ["--server-pid", String($0)] } ?? [])
        })
        let startedAt = MonotonicClock.nanoseconds()
        // The workers bound themselves; this bounds the wait for them, with a margin.
        let bound = startedAt + MonotonicClock.nanoseconds(connectTimeout + warmup + duration + 15)
        var meter = RateMeter()
        while !group.workers.allSatisfy({ $0.latest?["kind"]?.string == "final" || $0.outputClosed }) && MonotonicClock.nanoseconds() < bound {
            group.pump(timeoutMilliseconds: 100)
            progress.update(Self.progressLine(group.latestReports.compactMap { $0 }, meter: &meter, startedAt: startedAt, connections: connections))
        }
        for worker in group.stop(graceSeconds: 5) { problems.append("worker \(worker.index) had to be signalled to stop") }

        var merged = EchoResult()
        for worker in group.workers {
            if let final = worker.latest, final["kind"]?.string == "final", let result = final["result"] {
                merged.add(EchoResult(json: result))
            } else {
                problems.append("worker \(worker.index) (pid \(worker.pid)) sent no result: \(worker.exitDescription)")
            }
        }
        return merged
    }

    /// Adds up progress reports from one or more runs into the status line.
    private static func progressLine(_ reports: [JSON], meter: inout RateMeter, startedAt: UInt64, connections: Int) -> String {
        let sum = { (key: String) in reports.reduce(0) { $0 + ($1[key]?.int ?? $1["result"]?[key]?.int ?? 0) } }
        let phases = Set(reports.compactMap { $0["phase"]?.string })
        let elapsed = MonotonicClock.seconds(since: startedAt)
        let perSecond = meter.sample(sum("answered"), at: elapsed)
        let phase = phases.count == 1 ? phases.first! : phases.sorted().joined(separator: "/")
        // The worst process's p99 so far: a bound on the merged one, cheap to show live.
        let p99 = reports.compactMap { $0["p99_ns"]?.double }.max().map { "  p99 ≤ \(LatencyRecorder.format(nanoseconds: UInt64($0)))" } ?? ""
        return "\(phase)  open \(Format.grouped(sum("open")))/\(Format.grouped(connections))  \(Format.grouped(Int(perSecond))) msg/s\(p99)  errors \(Format.grouped(sum("errors")))  \(Format.fixed(elapsed, 1)) s"
    }
}
