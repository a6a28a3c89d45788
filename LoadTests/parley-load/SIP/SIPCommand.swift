import ArgumentParser
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load sip`: many SIP calls at once over UDP, as phones make them, each streaming G.711
/// both ways; how late the server's frames come, and what the calls cost it.
struct SIPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sip",
        abstract: "Hold N SIP calls over UDP (INVITE with a PCMU offer, ACK, RTP both ways every 20 ms, BYE), a share of them talking; time the set-up and how late the server's frames arrive.",
        discussion: """
            Each call sends its INVITE (PCMU and telephone-event offered; resent on timer A until a \
            response comes) from its own UDP socket, ACKs the 200, and then sends one PCMU packet every \
            20 ms, as a phone streams whether anyone speaks or not: the --input recording (resampled and \
            µ-law encoded here, as `calls` does for /twilio) for the --talking share, silence for the \
            rest. The calls' packets are spread over the 20 ms in 1 ms slots. Set-up is INVITE → 200 on \
            the client's clock. Every packet the server sends back is timed by the kernel's receive \
            clock (SO_TIMESTAMPNS) against its stream's own 20 ms schedule (its RTP timestamps, placed by \
            the stream's earliest packet in the measured window): lag p50 / p99 / max, missing sequence numbers, and holes over \
            40 ms. The p99 lag passes at --lag-budget-ms. Beside them, the server's \
            parley_audio_input_lag_seconds and parley_sip_call_setup_seconds over the run, its CPU and \
            RSS (--server-pid), the client's CPU and the machine's steal. One process, one thread, one \
            UDP socket per call (--trunk-sockets N sends every INVITE from N shared sockets instead, as \
            a trunk does from its one SIP port: the server's loops are chosen by the sender's address).
            """)

    @Argument(help: "Calls to hold (one process: at most 19,000, one UDP socket each).")
    var calls: Int

    @Option(help: "The share of calls talking (the rest stream silence).")
    var talking = 0.2

    @Option(help: "The server's SIP port on 127.0.0.1 (UDP).")
    var sipPort: UInt16 = 5060

    @Option(help: "The server's HTTP address for /metrics, http:// on a loopback address (none: no server figures but --server-pid's).")
    var url: String?

    @Option(help: "Speech the talking calls stream (WAV, any rate, mono or stereo).")
    var input: String

    @Option(help: "Seconds of silence after each pass through the recording, so that VAD ends a turn there.")
    var pause = 1.0

    @Option(help: "Calls placed a second (the server refuses past 200 INVITEs a second per loop).")
    var rate = 100.0

    @Option(help: "Unanswered INVITEs at once, at most.")
    var invitesInFlight = 100

    @Option(help: "Send every INVITE from this many shared sockets, as a trunk does (0: each call from its own).")
    var trunkSockets = 0

    @Option(help: "Seconds a call's INVITE may wait for its final response.")
    var setupTimeout = 10.0

    @Option(help: "Seconds of streaming after every call is up, before measuring.")
    var warmup = 5.0

    @Option(help: "Seconds measured.")
    var duration = 20.0

    @Option(help: "Seconds allowed for every call to be placed and answered.")
    var connectTimeout = 60.0

    @Option(help: "The server's process id, for its CPU and memory from /proc.")
    var serverPid: Int32?

    @Option(help: "The p99 lag of the server's frames that passes, in milliseconds.")
    var lagBudgetMs = 5.0

    @Option(help: "Also write the summary as JSON to this file.")
    var json: String?

    func validate() throws {
        guard (1...19_000).contains(calls) else { throw ValidationError("calls must be 1...19000 (one process)") }
        guard (0...1).contains(talking) else { throw ValidationError("--talking is a share, 0...1") }
        guard url.map({ $0.hasPrefix("http://") }) ?? true else { throw ValidationError("--url must be http://") }
        guard rate > 0, rate <= 10_000, (1...10_000).contains(invitesInFlight), (0...1000).contains(trunkSockets) else {
            throw ValidationError("--rate (0, 10000], --invites-in-flight 1...10000, --trunk-sockets 0...1000")
        }
        guard setupTimeout > 0, setupTimeout <= 64, connectTimeout > 0, connectTimeout <= 600 else { throw ValidationError("--setup-timeout (0, 64] and --connect-timeout (0, 600]") }
        guard warmup >= 0, warmup <= 600, duration > 0, duration <= 3600 else { throw ValidationError("--warmup 0...600 and --duration (0, 3600]") }
        // The window's arrival times are kept, 4 bytes a packet: 50 packets a call a second.
        guard Double(calls) * duration <= 1_000_000 else { throw ValidationError("calls × --duration at most 1,000,000 (200 MB of arrival times)") }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let target = try url.map { try LoadTarget("ws://" + $0.dropFirst("http://".count)) }
        DescriptorLimit.raiseToHard()
        let speech = try PhoneSpeech(wav: input, pause: pause)
        let talkers = Int((Double(calls) * talking).rounded())
        print("parley-load sip: \(Format.grouped(calls)) calls to 127.0.0.1:\(sipPort) over UDP at \(Format.fixed(rate, 0)) a second, \(Format.grouped(talkers)) talking \(input) (\(Format.fixed(speech.speechSeconds, 1)) s and \(Format.fixed(pause, 1)) s of silence, looped), the rest streaming silence; PCMU every 20 ms both ways; SIP from \(trunkSockets == 0 ? "each call's own socket" : "\(trunkSockets) shared socket\(trunkSockets == 1 ? "" : "s")")")
        Console.flush()

        var before: ServerMetrics?
        if let target {
            do throws(ServerMetrics.Unreachable) { before = try ServerMetrics.fetch(from: target) } catch { throw LoadFailure.unreachable(error, target) }
        }
        let residentBefore = serverPid.flatMap { ProcessFigures(pid: $0).residentBytes } ?? before?.residentBytes
        let run = try SIPLoadRun(.init(serverPort: sipPort, calls: calls, talking: talkers, frames: speech.frames, openRate: rate,
                                       invitesInFlight: invitesInFlight, trunkSockets: trunkSockets, setupTimeout: setupTimeout))
        let progress = Progress()
        run.open(deadline: MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(connectTimeout), progress: progress)
        run.stream(until: MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(warmup), measuring: false, progress: progress)

        let window = MeasuredWindow(target: target, serverPid: serverPid, duration: duration) { deadline, measuring, done in
            run.stream(until: deadline, measuring: measuring, progress: progress, until: done)
        }
        let byes = run.hangUp(deadline: MonotonicClock.nanoseconds() + 10_000_000_000, progress: progress)
        progress.finish()

        var serverSetup: ServerHistogram?
        if let before, let end = window.end, let b = ServerHistogram(SIPSummary.setupName, in: end) {
            serverSetup = ServerHistogram(SIPSummary.setupName, in: before).flatMap { b.since($0) } ?? b
        }
        let summary = SIPSummary(
            calls: calls, talking: talkers, run: run, window: window, byesAnswered: byes, residentBefore: residentBefore,
            callsOpenAtServer: window.end?.value("parley_sip_calls_open"), inputLag: window.histogram(VoiceSummary.lagName),
            serverSetup: serverSetup, lagBudget: lagBudgetMs * 1_000_000)
        print(summary.text)
        if let json { try TextFile.write(summary.json.pretty + "\n", to: json) }
        if !summary.passed { throw ExitCode.failure }
    }
}
