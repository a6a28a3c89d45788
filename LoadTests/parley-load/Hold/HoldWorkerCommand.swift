import ArgumentParser
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load hold-worker`: one child of `hold`, holding its share of the connections until its
/// stdin closes. Not for people to run: `hold` starts these with the right shares.
struct HoldWorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hold-worker",
        abstract: "Hold a share of the connections for `hold` (internal).",
        shouldDisplay: false)

    @Option var url: String
    @Option var ca: String?
    @Option var count: Int
    @Option(help: "Index of this worker's first connection across all workers.") var firstIndex: Int
    @Option var sources: Int
    @Option var rate: Double
    @Option var connectTimeout: Double
    @Option(help: "Seconds after which the worker exits even if its parent never says so.") var maxSeconds: Double

    /// Reports go out this often while connecting and holding.
    static let reportInterval: UInt64 = 500_000_000

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        DescriptorLimit.raiseToHard()
        let target = try LoadTarget(url, caFile: ca)
        let pool = try ConnectionPool(.init(
            target: target, count: count, firstIndex: firstIndex, sources: sources, rate: rate, connectTimeout: connectTimeout))
        pool.watchForHangUp(0)

        let lifetime = pool.startedAt + MonotonicClock.nanoseconds(maxSeconds)
        var nextReport = pool.startedAt + Self.reportInterval
        var reportedSettled = false
        while !pool.hungUp && MonotonicClock.nanoseconds() < lifetime {
            pool.step(timeoutMilliseconds: 100)
            let now = MonotonicClock.nanoseconds()
            // Report at once on settling: the parent is waiting for that to take its measurements.
            if now >= nextReport || (pool.settled && !reportedSettled) {
                reportedSettled = pool.settled
                ReportWriter.emit(HoldReport(pool, final: false).json)
                nextReport = now + Self.reportInterval
            }
        }
        // Counted before closing, so that the final report says how many were still open.
        let final = HoldReport(pool, final: true)
        pool.closeAll()
        ReportWriter.emit(final.json)
    }
}
