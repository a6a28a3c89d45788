import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load echo-worker`: one child of `echo --processes P`, running its share of the
/// connections and reporting its histogram as JSON at the end. Not for people to run.
struct EchoWorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "echo-worker",
        abstract: "Run a share of the echo connections for `echo` (internal).",
        shouldDisplay: false)

    @Option var url: String
    @Option var ca: String?
    @Option var connections: Int
    @Option var firstIndex: Int
    @Option var size: Int
    @Option var warmup: Double
    @Option var duration: Double
    @Option var connectTimeout: Double
    @Option var rate = 0.0
    @Option var batch = 1
    @Option var serverPid: Int32?

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        DescriptorLimit.raiseToHard()
        let run = try EchoRun(.init(
            target: try LoadTarget(url, caFile: ca), connections: connections, firstIndex: firstIndex, size: size,
            warmup: warmup, duration: duration, connectTimeout: connectTimeout, rate: rate, batch: batch, serverPid: serverPid))
        // Bounded by the connect timeout and the duration; stdin's end-of-file stops it sooner.
        let result = run.run(hangUpFD: 0) { ReportWriter.emit($0) }
        ReportWriter.emit(.object([("kind", .string("final")), ("result", result.json)]))
    }
}
