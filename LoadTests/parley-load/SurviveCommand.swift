import ArgumentParser
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load survive N`: N resumable Realtime sessions in conversation through one address (a
/// balancer in front of several nodes) while the nodes are restarted and killed under them; every
/// dropped session comes back with its resume token and last seq, and at the end every item the
/// client was told was done is asked for again.
struct SurviveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "survive",
        abstract: "Hold N resumable sessions in conversation through node restarts; resume every drop; count completed items lost.",
        discussion: """
            Each session connects with ?resume=1, keeps the newest session.resume_token and the seq \
            of the last event, and acks it every second. Every --turn-interval seconds (at its own \
            phase) it sends a text turn (conversation.item.create with an id of its own, then \
            response.create with output_modalities ["text"]) and waits for response.done. On any \
            drop (close 1012, 1001, 1006, EOF, connect refused, HTTP 503) it reconnects after 50 ms, \
            100 ms, … up to 1 s with ?resume_token=…&last_seq=…, and on session.resumed goes on; \
            a turn the server never heard of is sent again. After --duration seconds of turns and \
            the replies in flight, every session asks conversation.item.retrieve for every item \
            it saw in conversation.item.done or response.done: an item_not_found is a completed \
            item lost. One process.
            """)

    @Argument(help: "Sessions to hold (one process).")
    var count = 3000

    @Option(help: "The Realtime endpoint (the balancer's front); loopback only. ?resume=1 is added if missing.")
    var url = "ws://127.0.0.1:8080/v1/realtime?resume=1"

    @Option(help: "Seconds between one session's turns.")
    var turnInterval = 10.0

    @Option(help: "Seconds of turns, from the moment every session is open.")
    var duration = 150.0

    @Option(help: "Seconds allowed for every session to open and send session.created.")
    var connectTimeout = 60.0

    @Option(help: "Seconds allowed after the turns for replies in flight and resumes to finish.")
    var settleSeconds = 40.0

    @Option(help: "Connections started per second at the start.")
    var rate = 1000.0

    @Option(help: "Also write the summary as JSON to this file.")
    var json: String?

    func validate() throws {
        guard (1...19_000).contains(count) else { throw ValidationError("N must be 1...19000 (one client process)") }
        guard turnInterval > 0, turnInterval <= 3600 else { throw ValidationError("--turn-interval must be in (0, 3600]") }
        guard duration > 0, duration <= 3600 else { throw ValidationError("--duration must be in (0, 3600]") }
        guard duration / turnInterval <= 30 else {
            throw ValidationError("at most 30 turns per session: the server keeps 64 messages of history, and older items leave it")
        }
        guard connectTimeout > 0, settleSeconds > 0, rate > 0 else { throw ValidationError("timeouts and rate must be positive") }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let full = url.contains("resume=1") ? url : url + (url.contains("?") ? "&" : "?") + "resume=1"
        let target = try LoadTarget(full, caFile: nil)
        DescriptorLimit.raiseToHard()
        print("parley-load survive: \(Format.grouped(count)) resumable sessions to \(target), a text turn every \(Format.fixed(turnInterval, 1)) s each for \(Format.fixed(duration, 0)) s; reconnect with resume on every drop")
        Console.flush()
        let run = try SurviveRun(target: target, count: count, rate: rate, connectTimeout: connectTimeout,
                                 turnInterval: turnInterval, duration: duration, settleSeconds: settleSeconds)
        let cpuBefore = CPUTime.ofSelf()
        let startedAt = MonotonicClock.nanoseconds()
        run.drive()
        let summary = run.summary(cpu: CPUTime.ofSelf() - cpuBefore, seconds: MonotonicClock.seconds(since: startedAt))
        if let json { try TextFile.write(summary.json.pretty, to: json) }
        print(summary.table)
        if !summary.passed { throw ExitCode.failure }
    }
}
