import JSON

/// Set-up times from each call's milestones, all from the offer's POST: the answer, ICE's
/// success response, DTLS's keys, the `oai-events` channel's ACK, the first reply audio packet.
/// A call that never reached a milestone is not counted in it (the summary says how many did).
struct WebRTCSetupTimes {
    var answer = LatencyRecorder()
    var ice = LatencyRecorder()
    var dtls = LatencyRecorder()
    var channel = LatencyRecorder()
    var firstAudio = LatencyRecorder()

    /// Milestones in monotonic nanoseconds; 0 for one not reached.
    mutating func add(offeredAt: UInt64, answeredAt: UInt64, iceAt: UInt64, dtlsAt: UInt64, channelAt: UInt64, firstAudioAt: UInt64) {
        guard offeredAt > 0 else { return }
        func since(_ at: UInt64) -> UInt64? { at >= offeredAt ? at - offeredAt : nil }
        if answeredAt > 0, let t = since(answeredAt) { answer.record(t) }
        if iceAt > 0, let t = since(iceAt) { ice.record(t) }
        if dtlsAt > 0, let t = since(dtlsAt) { dtls.record(t) }
        if channelAt > 0, let t = since(channelAt) { channel.record(t) }
        if firstAudioAt > 0, let t = since(firstAudioAt) { firstAudio.record(t) }
    }

    var rows: [(String, LatencyRecorder)] {
        [("answer (201)", answer), ("ICE checked", ice), ("DTLS up", dtls), ("channel open", channel), ("first audio", firstAudio)]
    }
}

/// What `parley-load webrtc` reports: set-up, the calls that held, the server's lag, CPU and memory.
struct WebRTCSummary {
    let calls: Int
    let talking: Int
    let open: Int
    let failures: [String: Int]
    let events: [String: Int]
    let setup: WebRTCSetupTimes
    let measuredSeconds: Double
    let audioSent: Int
    let audioReceived: Int
    let tickLateness: LatencyRecorder
    let turnsSpoken: Int
    let repliesHeard: Int
    let repliesMissed: Int
    let serverCores: Double?
    let clientCores: Double
    let steal: Double?
    let residentBefore: Double
    let residentDuring: Double?
    let accountedBytes: Double?
    let callsOpenAtServer: Double?
    let lag: ServerHistogram?
    let lagBudget: Double

    init(calls: Int, talking: Int, run: WebRTCLoadRun, window: MeasuredWindow, residentBefore: Double, accountedBytes: Double?,
         callsOpenAtServer: Double?, lag: ServerHistogram?, lagBudget: Double) {
        self.calls = calls
        self.talking = talking
        var setup = WebRTCSetupTimes()
        var open = 0, spoken = 0, heard = 0, missed = 0
        for call in run.calls {
            setup.add(offeredAt: call.offeredAt, answeredAt: call.answeredAt, iceAt: call.iceAt, dtlsAt: call.dtlsAt,
                      channelAt: call.channelAt, firstAudioAt: call.firstAudioAt)
            if call.channelAt > 0, case .failed = call.phase {} else if call.channelAt > 0 { open += 1 }
            spoken += call.turns?.turnsSpoken ?? 0
            heard += call.turns?.repliesHeard ?? 0
            missed += call.turns?.repliesMissed ?? 0
        }
        self.setup = setup
        self.open = open
        turnsSpoken = spoken
        repliesHeard = heard
        repliesMissed = missed
        failures = run.failures
        events = run.events
        measuredSeconds = window.seconds
        audioSent = run.audioSentMeasuring
        audioReceived = run.audioReceivedMeasuring
        tickLateness = run.tickLateness
        serverCores = window.serverCores
        clientCores = window.clientCores
        steal = window.steal
        self.residentBefore = residentBefore
        residentDuring = window.serverResident
        self.accountedBytes = accountedBytes
        self.callsOpenAtServer = callsOpenAtServer
        self.lag = lag
        self.lagBudget = lagBudget
    }

    var lagP99: Double? { lag?.percentileBound(99) }
    /// Every call up through the measured window, and the server's p99 lag within budget.
    var passed: Bool { open == calls && (lagP99.map { $0 <= lagBudget } ?? false) }
    var residentPerCall: Double? { residentDuring.map { open > 0 ? max(0, $0 - residentBefore) / Double(open) : 0 } }

    var text: String {
        func ms(_ value: UInt64) -> String { LatencyRecorder.format(nanoseconds: value) }
        var lines = ["", "webrtc: \(Format.grouped(open))/\(Format.grouped(calls)) calls up, \(Format.grouped(talking)) talking; \(Format.fixed(measuredSeconds, 1)) s measured"]
        lines.append("  set-up from the offer's POST (p50 / p99 / max, calls):")
        for (name, recorder) in setup.rows {
            lines.append(Format.row(name, recorder.count > 0 ? "\(ms(recorder.percentile(50))) / \(ms(recorder.percentile(99))) / \(ms(recorder.maximum))  (\(recorder.count))" : "none", width: 15))
        }
        lines.append(Format.row("failed", Format.reasons(failures)))
        lines.append(Format.row("audio", "\(Format.grouped(audioSent)) packets sent, \(Format.grouped(audioReceived)) received while measuring"))
        lines.append(Format.row("turns", "\(Format.grouped(turnsSpoken)) spoken, \(Format.grouped(repliesHeard)) replies heard, \(Format.grouped(repliesMissed)) timed out"))
        lines.append(Format.row("client tick", tickLateness.count > 0 ? "late p50 \(ms(tickLateness.percentile(50))), p99 \(ms(tickLateness.percentile(99))), max \(ms(tickLateness.maximum))" : "n/a"))
        lines.append(Format.row("server lag", lag.map { "p99 \($0.formatPercentile(99)) (\($0.summaryLine)); budget \(Format.fixed(lagBudget * 1000, 0)) ms" } ?? "n/a (no parley_audio_input_lag_seconds)"))
        lines.append(Format.row("server CPU", serverCores.map { "\(Format.fixed($0, 2)) cores" } ?? "n/a"))
        lines.append(Format.row("client CPU", "\(Format.fixed(clientCores, 2)) cores"))
        lines.append(Format.row("steal", steal.map { Format.fixed($0 * 100, 1) + " %" } ?? "n/a"))
        lines.append(Format.row("server RSS", residentDuring.map { "\(Format.bytes($0)) (\(Format.bytes(residentBefore)) before), \(Format.bytes(residentPerCall ?? 0)) a call" } ?? "n/a"))
        lines.append(Format.row("accounted", accountedBytes.map { "\(Format.bytes($0)) (\(open > 0 ? Format.bytes($0 / Double(open)) : "n/a") a call)" } ?? "n/a"))
        lines.append(Format.row("server says", callsOpenAtServer.map { "\(Int($0)) calls open" } ?? "n/a"))
        let top = events.sorted { $0.value > $1.value }.prefix(14).map { "\($0.key) \(Format.grouped($0.value))" }.joined(separator: ", ")
        lines.append(Format.row("events", top.isEmpty ? "none" : top))
        lines.append(passed ? "PASS" : "FAIL: \(open < calls ? "\(calls - open) calls not up" : "server lag p99 over budget or unknown")")
        return lines.joined(separator: "\n")
    }

    var json: JSON {
        func number(_ value: Double?) -> JSON { value.map { .number($0) } ?? .null }
        return .object([
            ("calls", .number(Double(calls))), ("talking", .number(Double(talking))), ("open", .number(Double(open))),
            ("setup", .object(setup.rows.map { ($0.0, $0.1.json) })),
            ("failures", .object(failures.map { ($0.key, .number(Double($0.value))) })),
            ("measured_seconds", .number(measuredSeconds)),
            ("audio_sent", .number(Double(audioSent))), ("audio_received", .number(Double(audioReceived))),
            ("turns_spoken", .number(Double(turnsSpoken))), ("replies_heard", .number(Double(repliesHeard))),
            ("tick_lateness", tickLateness.json),
            ("server_lag", lag?.json ?? .null), ("server_lag_p99_seconds", number(lagP99.flatMap { $0.isFinite ? $0 : nil })),
            ("server_cores", number(serverCores)), ("client_cores", .number(clientCores)), ("steal", number(steal)),
            ("server_resident_before", .number(residentBefore)), ("server_resident", number(residentDuring)),
            ("server_resident_per_call", number(residentPerCall)), ("accounted_bytes", number(accountedBytes)),
            ("passed", .bool(passed)),
        ])
    }
}
