import JSON

/// What `parley-load sip` reports: set-up, the calls that held, how late the server's frames came
/// against their schedule, the server's own input lag, CPU and memory.
struct SIPSummary {
    static let setupName = "parley_sip_call_setup_seconds"

    let calls: Int
    let talking: Int
    let up: Int
    let failures: [String: Int]
    let setup: LatencyRecorder
    let inviteResends: Int
    let serverByes: Int
    let strangers: Int
    let byesAnswered: Int
    let measuredSeconds: Double
    let sent: Int
    let received: Int
    let missing: Int
    let gaps: Int
    let longestInterval: UInt64
    let stalls: Int
    let sound: Int
    let lag: LatencyRecorder
    let tickLateness: LatencyRecorder
    let serverCores: Double?
    let clientCores: Double
    /// Every other process on the machine, over the window.
    let otherCores: Double?
    let steal: Double?
    let residentBefore: Double?
    let residentDuring: Double?
    let callsOpenAtServer: Double?
    let inputLag: ServerHistogram?
    let serverSetup: ServerHistogram?
    /// Nanoseconds.
    let lagBudget: Double

    init(calls: Int, talking: Int, run: SIPLoadRun, window: MeasuredWindow, byesAnswered: Int, residentBefore: Double?, callsOpenAtServer: Double?,
         inputLag: ServerHistogram?, serverSetup: ServerHistogram?, lagBudget: Double) {
        self.calls = calls
        self.talking = talking
        // Up through the measured window: answered, and neither failed nor hung up on before the end.
        up = run.calls.count { $0.answeredAt > 0 && { if case .failed = $0.phase { false } else { true } }($0) }
        failures = run.failures
        setup = run.setup
        inviteResends = run.inviteResends
        serverByes = run.serverByes
        strangers = run.strangers
        self.byesAnswered = byesAnswered
        measuredSeconds = window.seconds
        sent = run.sentMeasuring
        received = run.receivedMeasuring
        missing = run.missingMeasuring
        gaps = run.gapsMeasuring
        longestInterval = run.longestInterval
        stalls = run.stallsMeasuring
        sound = run.soundMeasuring
        lag = run.lag
        tickLateness = run.tickLateness
        serverCores = window.serverCores
        clientCores = window.clientCores
        otherCores = window.otherCores
        steal = window.steal
        self.residentBefore = residentBefore
        residentDuring = window.serverResident
        self.callsOpenAtServer = callsOpenAtServer
        self.inputLag = inputLag
        self.serverSetup = serverSetup
        self.lagBudget = lagBudget
    }

    /// Packets the server should have sent in the window: one every 20 ms on every call up.
    var expected: Int { Int((Double(up) * measuredSeconds * 50).rounded()) }
    var lagP99: UInt64 { lag.percentile(99) }
    /// Every call up through the window, and the p99 lag of the server's frames within budget.
    var passed: Bool { up == calls && lag.count > 0 && Double(lagP99) <= lagBudget }
    var residentPerCall: Double? {
        guard let residentBefore, let residentDuring else { return nil }
        return up > 0 ? max(0, residentDuring - residentBefore) / Double(up) : 0
    }

    var text: String {
        func ms(_ value: UInt64) -> String { LatencyRecorder.format(nanoseconds: value) }
        func spread(_ r: LatencyRecorder) -> String {
            r.count > 0 ? "p50 \(ms(r.percentile(50))), p99 \(ms(r.percentile(99))), p99.9 \(ms(r.percentile(99.9))), max \(ms(r.maximum))" : "none"
        }
        var lines = ["", "sip: \(Format.grouped(up))/\(Format.grouped(calls)) calls up, \(Format.grouped(talking)) talking; \(Format.fixed(measuredSeconds, 1)) s measured"]
        lines.append(Format.row("set-up", setup.count > 0 ? "INVITE → 200 \(spread(setup)) (\(Format.grouped(Int(setup.count))) calls); \(Format.grouped(inviteResends)) INVITEs resent" : "none"))
        lines.append(Format.row("server set-up", serverSetup.map { "p50 \($0.formatPercentile(50)), p99 \($0.formatPercentile(99)) (\(Self.setupName), \(Format.grouped($0.observations)) calls)" } ?? "n/a"))
        lines.append(Format.row("failed", Format.reasons(failures)))
        lines.append(Format.row("RTP out", "\(Format.grouped(sent)) packets while measuring"))
        lines.append(Format.row("RTP in", "\(Format.grouped(received)) of \(Format.grouped(expected)) due; \(Format.grouped(missing)) missing, \(Format.grouped(gaps)) holes over 40 ms (\(Format.grouped(stalls)) over 200 ms, after which the stream's schedule started again), longest \(ms(longestInterval)); \(Format.grouped(sound)) not silence; \(Format.grouped(strangers)) from elsewhere, dropped"))
        lines.append(Format.row("frame lag", "\(spread(lag)) behind each stream's 20 ms schedule in the window (kernel receive times); budget \(Format.fixed(lagBudget / 1e6, 1)) ms at p99"))
        lines.append(Format.row("", "over 5 ms: \(Format.grouped(Int(lag.count(above: 5_000_000)))), over 20 ms: \(Format.grouped(Int(lag.count(above: 20_000_000))))"))
        lines.append(Format.row("client slots", tickLateness.count > 0 ? "late \(spread(tickLateness))" : "n/a"))
        lines.append(Format.row("server input lag", inputLag.map { "p99 \($0.formatPercentile(99)) (\($0.summaryLine))" } ?? "n/a (no parley_audio_input_lag_seconds)"))
        lines.append(Format.row("server CPU", serverCores.map { "\(Format.fixed($0, 2)) cores" } ?? "n/a"))
        lines.append(Format.row("client CPU", "\(Format.fixed(clientCores, 2)) cores"))
        lines.append(Format.row("other processes", otherCores.map { "\(Format.fixed($0, 2)) cores (the machine's busy time less the server's and the client's)" } ?? "n/a"))
        lines.append(Format.row("steal", steal.map { Format.fixed($0 * 100, 1) + " %" } ?? "n/a"))
        lines.append(Format.row("server RSS", residentDuring.map { "\(Format.bytes($0)) (\(residentBefore.map(Format.bytes) ?? "n/a") before), \(residentPerCall.map(Format.bytes) ?? "n/a") a call" } ?? "n/a"))
        lines.append(Format.row("server says", callsOpenAtServer.map { "\(Int($0)) SIP calls open" } ?? "n/a"))
        lines.append(Format.row("hung up", "\(Format.grouped(byesAnswered)) BYEs answered; \(Format.grouped(serverByes)) calls ended by the server"))
        lines.append(passed ? "PASS" : "FAIL: \(up < calls ? "\(calls - up) calls not up" : "frame lag p99 over budget, or no frames")")
        return lines.joined(separator: "\n")
    }

    var json: JSON {
        func number(_ value: Double?) -> JSON { value.map { .number($0) } ?? .null }
        return .object([
            ("calls", .number(Double(calls))), ("talking", .number(Double(talking))), ("up", .number(Double(up))),
            ("setup", setup.json), ("invite_resends", .number(Double(inviteResends))),
            ("server_setup", serverSetup?.json ?? .null),
            ("failures", .object(failures.map { ($0.key, .number(Double($0.value))) })),
            ("measured_seconds", .number(measuredSeconds)),
            ("rtp_sent", .number(Double(sent))), ("rtp_received", .number(Double(received))), ("rtp_expected", .number(Double(expected))),
            ("rtp_missing", .number(Double(missing))), ("rtp_holes_over_40ms", .number(Double(gaps))),
            ("rtp_longest_interval_ns", .number(Double(longestInterval))), ("rtp_stalls_over_200ms", .number(Double(stalls))), ("rtp_sound", .number(Double(sound))), ("rtp_strangers", .number(Double(strangers))),
            ("lag", lag.json), ("lag_p99_ns", .number(Double(lagP99))), ("lag_over_5ms", .number(Double(lag.count(above: 5_000_000)))),
            ("client_slot_lateness", tickLateness.json),
            ("server_input_lag", inputLag?.json ?? .null),
            ("server_cores", number(serverCores)), ("client_cores", .number(clientCores)), ("other_cores", number(otherCores)), ("steal", number(steal)),
            ("server_resident_before", number(residentBefore)), ("server_resident", number(residentDuring)),
            ("server_resident_per_call", number(residentPerCall)),
            ("byes_answered", .number(Double(byesAnswered))), ("server_byes", .number(Double(serverByes))),
            ("passed", .bool(passed)),
        ])
    }
}
