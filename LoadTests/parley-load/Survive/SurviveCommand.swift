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

            --tools: every session declares get_weather, and every third text turn asks for the \
            weather; on a response.done whose output holds function calls, the client adds a \
            function_call_output for each (never twice: an output the replay after a resume did not \
            acknowledge is sent again) and asks again; the turn ends at the response.done without \
            a call. --spoken K: the first K sessions speak instead (push to talk: turn_detection \
            null, spoken replies in pcm16 24 kHz): a question made with Piper, espeak-ng and flite \
            (every voice, by session), appended in 100 ms pieces, committed, then response.create. \
            --cut-every M: every Mth spoken reply, once 300 ms of its audio arrived, is cancelled \
            and truncated at the audio received; the response must end cancelled (or completed, \
            had it finished first), conversation.item.truncated come back with the same \
            audio_end_ms, and the item's transcript, right after the cut and at the end, be a word \
            prefix of the one streamed. --tenant-key KEY: the last --tenant-sessions sessions offer \
            KEY (the openai-insecure-api-key subprotocol; the others send PARLEY_LOAD_API_KEY as \
            their bearer key, if set); those the server refuses with 429 open again every 5 s \
            through the turns; the tenant's open sessions are sampled every second, and more than \
            3 × --tenant-limit at once fails the run. Every close the server sends must be one \
            docs/protocol.md gives; every response.done must have a status of the API's (a failed \
            one its error).
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

    @Flag(help: "Every session declares get_weather; every third text turn asks for the weather and answers the model's call.")
    var tools = false

    @Option(help: "The first K sessions speak their turns (pcm16 24 kHz, push to talk) instead of typing them.")
    var spoken = 0

    @Option(help: "The venv holding Piper and its joe voice, for --spoken.")
    var speechVenv = ".venv-speech"

    @Option(help: "Every Mth spoken turn, the reply is cut (response.cancel, conversation.item.truncate) once 300 ms of its audio has arrived (0: never).")
    var cutEvery = 0

    @Option(name: .customLong("tenant-key"), help: "A test key of a tenant the server caps (its sessions: --tenant-sessions, its cap: --tenant-limit); it shows in the process list, so PARLEY_LOAD_TENANT_KEY is read when this is not given.")
    var tenantKeyOption: String?

    /// The capped tenant's key: the option, else PARLEY_LOAD_TENANT_KEY (kept out of the process
    /// list and of the command line a report echoes).
    var tenantKey: String? {
        tenantKeyOption ?? getenv("PARLEY_LOAD_TENANT_KEY").map { String(cString: $0) }
    }

    @Option(help: "The last S sessions present --tenant-key.")
    var tenantSessions = 0

    @Option(help: "The tenant's session limit on the server (--tenant-max-sessions): 3 × it open at once fails the run.")
    var tenantLimit = 0

    /// The server keeps 64 items of history; a weather turn adds four (the question, the call, its
    /// output, the answer), every other turn two.
    var maxTurns: Int { tools ? 22 : 30 }

    func validate() throws {
        guard (1...19_000).contains(count) else { throw ValidationError("N must be 1...19000 (one client process)") }
        guard turnInterval > 0, turnInterval <= 3600 else { throw ValidationError("--turn-interval must be in (0, 3600]") }
        guard duration > 0, duration <= 3600 else { throw ValidationError("--duration must be in (0, 3600]") }
        guard duration / turnInterval <= Double(maxTurns) else {
            throw ValidationError("at most \(maxTurns) turns per session\(tools ? " with --tools" : ""): the server keeps 64 messages of history, and older items leave it")
        }
        guard connectTimeout > 0, settleSeconds > 0, rate > 0 else { throw ValidationError("timeouts and rate must be positive") }
        guard (0...count).contains(spoken) else { throw ValidationError("--spoken must be 0...N") }
        guard cutEvery >= 0 else { throw ValidationError("--cut-every must be 0 (never) or more") }
        guard cutEvery == 0 || spoken > 0 else { throw ValidationError("--cut-every cuts spoken replies: give --spoken too") }
        if let tenantKey {
            // It goes in a subprotocol, a token of RFC 7230's characters (no spaces, no commas).
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~!#$&'*+^`|")
            guard !tenantKey.isEmpty, tenantKey.allSatisfy(allowed.contains) else {
                throw ValidationError("--tenant-key must be a token: letters, digits and -_.~!#$&'*+^`|")
            }
            guard (1...count).contains(tenantSessions) else { throw ValidationError("--tenant-sessions must be 1...N with --tenant-key") }
            guard tenantLimit >= 1 else { throw ValidationError("--tenant-limit must be the server's --tenant-max-sessions, 1 or more") }
        } else if tenantSessions != 0 || tenantLimit != 0 {
            throw ValidationError("--tenant-sessions and --tenant-limit need --tenant-key")
        }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let full = url.contains("resume=1") ? url : url + (url.contains("?") ? "&" : "?") + "resume=1"
        let target = try LoadTarget(full, caFile: nil)
        DescriptorLimit.raiseToHard()
        print("parley-load survive: \(Format.grouped(count)) resumable sessions to \(target), a turn every \(Format.fixed(turnInterval, 1)) s each for \(Format.fixed(duration, 0)) s; reconnect with resume on every drop")
        var extras: [String] = []
        if tools { extras.append("every third text turn calls get_weather") }
        if spoken > 0 { extras.append("\(spoken) sessions speak" + (cutEvery > 0 ? ", every \(cutEvery) spoken replies one is cut" : "")) }
        if tenantKey != nil { extras.append("the last \(tenantSessions) sessions are a tenant capped at \(tenantLimit)") }
        if !extras.isEmpty { print("  " + extras.joined(separator: "; ")) }
        Console.flush()
        // Made before any session opens: no synthesiser runs while the sessions are timed.
        var speech: SurviveSpeech?
        if spoken > 0 {
            Console.error("making speech: \(SurviveSpeech.sentences.count) questions in \(TurnTakingVoice.allCases.count) voices\n")
            let made = try SurviveSpeech(venv: speechVenv)
            Console.error("made \(made.clipCount) clips, \(Format.fixed(Double(made.totalMilliseconds) / 1000, 1)) s of speech\n")
            speech = made
        }
        let settings = SurviveRun.Settings(count: count, rate: rate, connectTimeout: connectTimeout, turnInterval: turnInterval, duration: duration,
                                           settleSeconds: settleSeconds, tools: tools, spoken: spoken, cutEvery: cutEvery,
                                           tenantKey: tenantKey, tenantSessions: tenantSessions, tenantLimit: tenantLimit)
        let run = try SurviveRun(target: target, settings: settings, speech: speech)
        let cpuBefore = CPUTime.ofSelf()
        let startedAt = MonotonicClock.nanoseconds()
        run.drive()
        let summary = run.summary(cpu: CPUTime.ofSelf() - cpuBefore, seconds: MonotonicClock.seconds(since: startedAt))
        if let json { try TextFile.write(summary.json.pretty, to: json) }
        print(summary.table)
        if !summary.passed { throw ExitCode.failure }
    }
}
