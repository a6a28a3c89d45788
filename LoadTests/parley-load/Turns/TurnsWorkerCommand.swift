import ArgumentParser
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load turns-worker`: one child of `turns`, running its share of the sessions. It
/// connects, reports "ready", waits for the line "start <monotonic ns>" on its stdin, runs the
/// turns, reports "drained" with its results, and closes its sessions when its stdin ends. Not for
/// people to run: `turns` starts these with the right shares.
struct TurnsWorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "turns-worker",
        abstract: "Run a share of the sessions for `turns` (internal).",
        shouldDisplay: false)

    @Option var url: String
    @Option var ca: String?
    @Option var count: Int
    @Option(help: "Index of this worker's first session across all workers.") var firstIndex: Int
    @Option var sources: Int
    @Option var rate: Double
    @Option var connectTimeout: Double
    @Option var turnInterval: Double
    @Option var warmup: Double
    @Option var duration: Double
    @Option(help: "Function tools each session declares in a session.update before its first turn.") var tools = 0
    @Option(help: "Seconds after which the worker exits even if its parent never says so.") var maxSeconds: Double

    static let reportInterval: UInt64 = 500_000_000

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        DescriptorLimit.raiseToHard()
        let run = try TurnsRun(.init(
            target: try LoadTarget(url, caFile: ca), count: count, firstIndex: firstIndex, sources: sources, rate: rate,
            connectTimeout: connectTimeout, turnInterval: turnInterval, warmup: warmup, duration: duration, tools: tools))
        run.pool.watchForHangUp(0)

        let lifetime = run.pool.startedAt + MonotonicClock.nanoseconds(maxSeconds)
        var nextReport = run.pool.startedAt + Self.reportInterval
        var reportedPhase = run.phase
        while !run.pool.hungUp && MonotonicClock.nanoseconds() < lifetime {
            run.step()
            while let line = run.pool.lineFromParent() {
                if line.hasPrefix("start "), let start = UInt64(line.dropFirst("start ".count)) { run.begin(at: start) }
            }
            let now = MonotonicClock.nanoseconds()
            // At once on ready and on drained: the parent is waiting for those to act.
            let news = run.phase != reportedPhase && (run.phase == .ready || run.phase == .drained)
            if now >= nextReport || news {
                reportedPhase = run.phase
                ReportWriter.emit(TurnsReport(run, final: false).json)
                nextReport = now + Self.reportInterval
            }
        }
        // Counted before closing, so that the final report says how many were still open.
        let final = TurnsReport(run, final: true)
        run.pool.closeAll()
        ReportWriter.emit(final.json)
    }
}
