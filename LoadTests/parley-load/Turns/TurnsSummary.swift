import JSON

/// Everything `turns` found, printed in two parts (once the sessions are open, then after the
/// turns) and optionally written as JSON.
struct TurnsSummary {
    let target: LoadTarget
    let requested: Int
    let processes: Int
    let sources: Int
    let turnInterval: Double
    let warmup: Double
    let duration: Double
    /// Function tools each session declared before its first turn (0: no session.update).
    let tools: Int

    /// The workers' reports added together, once every session had opened or failed (and, with
    /// tools, had its session.updated or an error).
    var connect = TurnsReport()
    /// Seconds from the first connect to the last open.
    var connectSeconds = 0.0
    var serverBefore: ServerMetrics?
    var serverConnected: ServerMetrics?
    /// Scraped as the measured period began, and once its replies had drained: the server's
    /// histograms are the difference.
    var serverStart: ServerMetrics?
    var serverEnd: ServerMetrics?
    /// The workers' final reports, added.
    var atEnd = TurnsReport()
    /// Workers' and parent's CPU over the measured period.
    var cpuMeasured = CPUTime.zero
    /// Parent and all workers, from getrusage once the workers have been reaped.
    var cpuTotal = CPUTime.zero
    var problems: [String] = []
    var notes: [String] = []

    static let addedLatency = "parley_server_added_latency_seconds"
    static let firstToken = "parley_upstream_first_token_seconds"

    var passed: Bool { problems.isEmpty }
    var result: TurnsResult { atEnd.result }
    var connectRate: Double { connectSeconds > 0 ? Double(connect.connected) / connectSeconds : 0 }
    /// Turns a second the schedule asks for: every session once an interval.
    var scheduledPerSecond: Double { Double(requested) / turnInterval }
    var clientCores: Double { result.measuredSeconds > 0 ? cpuMeasured.total / result.measuredSeconds : 0 }
    /// The bytes of the session.update each session sent; 0 without tools.
    var sessionUpdateBytes: Int { tools > 0 ? TurnsTools.sessionUpdate(tools).utf8.count : 0 }

    /// The server's histogram `name` over the measured period; nil when it does not export it.
    func serverHistogram(_ name: String) -> ServerHistogram? {
        guard let start = serverStart, let end = serverEnd,
              let before = ServerHistogram(name, in: start), let after = ServerHistogram(name, in: end) else { return nil }
        return after.since(before)
    }

    /// A counter's growth over the measured period, by one label.
    private func serverCounts(_ name: String, by label: String) -> [String: Int]? {
        guard let start = serverStart, let end = serverEnd else { return nil }
        let before = start.counts(name, by: label), after = end.counts(name, by: label)
        guard !after.isEmpty else { return nil }
        var grown: [String: Int] = [:]
        for (key, value) in after { grown[key] = value - (before[key] ?? 0) }
        return grown
    }

    // MARK: Text

    var connectSection: String {
        var lines = ["", "== sessions  (\(Format.grouped(requested)) to \(target), \(processes) process\(processes == 1 ? "" : "es"), \(sources) source addresses)"]
        lines.append(Format.row("sessions open", "\(Format.grouped(connect.open)) of \(Format.grouped(requested))  (\(tools > 0 ? "session.updated" : "session.created") on \(Format.grouped(connect.ready)); connected \(Format.grouped(connect.connected)), failed \(Format.grouped(connect.failedCount)), dropped \(Format.grouped(connect.droppedCount)))"))
        lines.append(Format.row("connect rate", "\(Format.grouped(Int(connectRate.rounded()))) conn/s  (\(Format.fixed(connectSeconds, 2)) s from first connect to last open)"))
        if connect.handshake.count > 0 {
            let h = connect.handshake
            lines.append(Format.row("connect to 101", "p50 \(LatencyRecorder.format(nanoseconds: h.percentile(50)))  p99 \(LatencyRecorder.format(nanoseconds: h.percentile(99)))  max \(LatencyRecorder.format(nanoseconds: h.maximum))"))
        }
        lines.append(Format.row("failures", Format.reasons(connect.failed)))
        if connect.droppedCount > 0 { lines.append(Format.row("dropped", Format.reasons(connect.dropped))) }
        lines.append(toolsRow)
        if let server = serverConnected {
            lines += memoryRows(server)
        } else {
            lines.append(Format.row("server", "metrics unavailable"))
        }
        return lines.joined(separator: "\n")
    }

    /// "tools: K", and with tools, how the session.update went.
    private var toolsRow: String {
        guard tools > 0 else { return Format.row("tools", "0  (no session.update)") }
        var value = "\(tools) function tools per session, the same list in every session  (session.update of \(Format.grouped(sessionUpdateBytes)) B"
        let u = connect.sessionUpdate
        if u.count > 0 {
            value += "; → session.updated p50 \(LatencyRecorder.format(nanoseconds: u.percentile(50)))  p99 \(LatencyRecorder.format(nanoseconds: u.percentile(99)))  max \(LatencyRecorder.format(nanoseconds: u.maximum))"
        }
        if connect.updateRefused > 0 { value += "; refused: \(Format.grouped(connect.updateRefused))" }
        return Format.row("tools", value + ")")
    }

    /// Resident and accounted bytes per session, once every session was ready and at the end.
    private var bytesPerSessionRow: String {
        func pair(_ m: ServerMetrics?) -> (resident: String, accounted: String) {
            guard let m, m.realtimeOpen > 0 else { return ("n/a", "n/a") }
            return ("\(Format.grouped(Int(m.residentBytesPerConnection))) B", "\(Format.grouped(Int(m.accountedBytesPerConnection))) B")
        }
        let idle = pair(serverConnected), end = pair(serverEnd)
        return Format.row("bytes/session", "resident \(idle.resident) idle, \(end.resident) at the end; accounted \(idle.accounted) idle, \(end.accounted) at the end  (tools: \(tools); idle: every session ready, before any turn)")
    }

    private func memoryRows(_ server: ServerMetrics) -> [String] {
        let open = server.realtimeOpen
        let rss = server.residentBytes, startup = server.startupResidentBytes
        var rows = [
            Format.row("server open", "\(Format.grouped(open)) realtime sessions"),
            Format.row("server RSS", "\(Format.bytes(rss))  (startup \(Format.bytes(startup)), growth \(Format.bytes(rss - startup)))"),
        ]
        if open > 0 {
            rows.append(Format.row("resident/conn", "\(Format.grouped(Int(server.residentBytesPerConnection))) B  (parley_resident_bytes_per_connection: (rss - startup) / open sessions)"))
            rows.append(Format.row("accounted/conn", "\(Format.grouped(Int(server.accountedBytesPerConnection))) B  (parley_accounted_bytes_per_connection)"))
        }
        return rows
    }

    var turnsSection: String {
        let r = result
        func ms(_ h: LatencyRecorder, _ p: Double) -> String { LatencyRecorder.format(nanoseconds: h.percentile(p)) }
        var lines = ["", "== turns  (a text turn every \(Format.fixed(turnInterval, 1)) s per session, phases spread evenly; \(Format.fixed(warmup, 1)) s warm-up + \(Format.fixed(r.measuredSeconds, 1)) s measured; tools: \(tools))"]
        lines.append(Format.row("sessions open", "\(Format.grouped(atEnd.open)) of \(Format.grouped(requested)) at the end  (dropped during the run: \(Format.reasons(atEnd.dropped)); server pings answered: \(Format.grouped(atEnd.pongs)))"))
        lines.append(Format.row("turns", "\(Format.grouped(r.turns)) sent = \(Format.fixed(r.turnsPerSecond, 1)) turns/s  (schedule \(Format.fixed(scheduledPerSecond, 1))/s; sent up to \(LatencyRecorder.format(nanoseconds: r.maxSendLag)) late)"))
        if r.skippedBusy + r.skippedClosed > 0 {
            lines.append(Format.row("skipped", "\(Format.grouped(r.skippedBusy)) turns came due with the previous reply still running, \(Format.grouped(r.skippedClosed)) on closed sessions"))
        }
        var answers = "\(Format.reasons(r.statuses))"
        if r.refused > 0 { answers += "; refused with an error: \(Format.grouped(r.refused))" }
        if r.unanswered > 0 { answers += "; no response.done \(Format.fixed(TurnsRun.drainSeconds, 0)) s after the period: \(Format.grouped(r.unanswered))" }
        if r.lostInFlight > 0 { answers += "; session lost mid-reply: \(Format.grouped(r.lostInFlight))" }
        lines.append(Format.row("responses", answers))
        if !r.notCompleted.isEmpty { lines.append(Format.row("not completed", Format.reasons(r.notCompleted))) }
        lines.append(Format.row("errors", Format.reasons(r.errors) + (r.strays > 0 ? "  (and \(Format.grouped(r.strays)) response.done for no turn in flight)" : "")))
        let d = r.firstDelta, done = r.done
        lines.append(Format.row("first delta", d.count == 0 ? "none measured" : "p50 \(ms(d, 50))   p99 \(ms(d, 99))   p99.9 \(ms(d, 99.9))   max \(LatencyRecorder.format(nanoseconds: d.maximum))  (client: response.create sent → first response.output_text.delta; \(Format.grouped(Int(d.count))) turns)"))
        lines.append(Format.row("response.done", done.count == 0 ? "none measured" : "p50 \(ms(done, 50))   p99 \(ms(done, 99))   max \(LatencyRecorder.format(nanoseconds: done.maximum))  (client: response.create sent → response.done)"))
        if let server = serverEnd {
            lines += memoryRows(server)
            if let responses = serverCounts("parley_session_responses_total", by: "status") {
                lines.append(Format.row("server replies", "\(Format.reasons(responses))  (parley_session_responses_total over the period, warm-up turns finishing in it included)"))
            }
        } else {
            lines.append(Format.row("server", "metrics unavailable at the end"))
        }
        lines.append(bytesPerSessionRow)
        for (label, name) in [("server added", Self.addedLatency), ("upstream TTFT", Self.firstToken)] {
            if let histogram = serverHistogram(name) {
                lines.append(Format.row(label, "\(histogram.summaryLine)  (\(name))"))
            } else if serverStart == nil || serverEnd == nil {
                lines.append(Format.row(label, "n/a  (the server was not read at both ends of a measured period)"))
            } else {
                lines.append(Format.row(label, "n/a  (\(name) is not in the server's /metrics)"))
            }
        }
        lines.append(Format.row("client CPU", "\(Format.fixed(cpuMeasured.total, 2)) s user+sys while measuring = \(Format.fixed(clientCores, 2)) of \(Cores.online) cores  (user \(Format.fixed(cpuMeasured.user, 2)) s, sys \(Format.fixed(cpuMeasured.system, 2)) s; \(Format.fixed(cpuTotal.total, 2)) s over the whole run, workers and parent)"))
        if clientCores >= 0.5 * Double(Cores.online) {
            lines.append(Format.row("note", "the client used \(Int((100 * clientCores / Double(Cores.online)).rounded()))% of this machine's \(Cores.online) cores while measuring, cores the server shares"))
        }
        for note in notes { lines.append(Format.row("note", note)) }
        lines.append("")
        if passed {
            lines.append("PASS: all \(Format.grouped(requested)) sessions opened and every measured turn completed")
        } else {
            lines.append("FAIL: " + problems.joined(separator: "; "))
        }
        return lines.joined(separator: "\n")
    }


    // MARK: JSON

    var json: JSON {
        func server(_ m: ServerMetrics?) -> JSON {
            guard let m else { return .null }
            return .object([
                ("realtime_open", .int(m.realtimeOpen)),
                ("resident_bytes", .number(m.residentBytes)),
                ("startup_resident_bytes", .number(m.startupResidentBytes)),
                ("server_resident_bytes_per_connection", .number(m.residentBytesPerConnection)),
                ("server_accounted_bytes_per_connection", .number(m.accountedBytesPerConnection)),
            ])
        }
        func latency(_ h: LatencyRecorder) -> JSON {
            .object([("count", .number(Double(h.count))), ("p50", .number(Double(h.percentile(50)))), ("p99", .number(Double(h.percentile(99)))),
                     ("p99_9", .number(Double(h.percentile(99.9)))), ("max", .number(Double(h.maximum)))])
        }
        // Resident and accounted, once every session was ready and before any turn ("idle"), and at the end.
        func perSession(_ m: ServerMetrics?) -> JSON {
            guard let m, m.realtimeOpen > 0 else { return .null }
            return .object([("resident", .number(m.residentBytesPerConnection)), ("accounted", .number(m.accountedBytesPerConnection))])
        }
        let bytesPerSession = JSON.object([("tools", .int(tools)), ("idle", perSession(serverConnected)), ("end", perSession(serverEnd))])
        let r = result
        return .object([
            ("command", .string("turns")),
            ("url", .string(target.url)),
            ("requested", .int(requested)),
            ("processes", .int(processes)),
            ("sources", .int(sources)),
            ("turn_interval_seconds", .number(turnInterval)),
            ("warmup_seconds", .number(warmup)),
            ("measured_seconds", .number(r.measuredSeconds)),
            ("tools", .int(tools)),
            ("session_update_bytes", .int(sessionUpdateBytes)),
            ("connected", .int(connect.connected)),
            ("ready", .int(connect.ready)),
            ("update_refused", .int(connect.updateRefused)),
            ("session_update_ns", connect.sessionUpdate.count > 0 ? latency(connect.sessionUpdate) : .null),
            ("failed", .counts(connect.failed)),
            ("connect_rate", .number(connectRate.rounded())),
            ("open_at_end", .int(atEnd.open)),
            ("dropped", .counts(atEnd.dropped)),
            ("turns", .int(r.turns)),
            ("turns_per_second", .number(r.turnsPerSecond)),
            ("scheduled_per_second", .number(scheduledPerSecond)),
            ("skipped_busy", .int(r.skippedBusy)),
            ("skipped_closed", .int(r.skippedClosed)),
            ("max_send_lag_ns", .number(Double(r.maxSendLag))),
            ("responses", .counts(r.statuses)),
            ("not_completed", .counts(r.notCompleted)),
            ("refused", .int(r.refused)),
            ("unanswered", .int(r.unanswered)),
            ("lost_in_flight", .int(r.lostInFlight)),
            ("errors", .counts(r.errors)),
            ("first_delta_ns", latency(r.firstDelta)),
            ("done_ns", latency(r.done)),
            ("server_connected", server(serverConnected)),
            ("server_end", server(serverEnd)),
            ("bytes_per_session", bytesPerSession),
            ("server_responses", serverCounts("parley_session_responses_total", by: "status").map(JSON.counts) ?? .null),
            ("server_added_latency", serverHistogram(Self.addedLatency)?.json ?? .null),
            ("upstream_first_token", serverHistogram(Self.firstToken)?.json ?? .null),
            ("client_cpu_measured", cpuMeasured.json),
            ("client_cores_while_measuring", .number(clientCores)),
            ("client_cpu_total", cpuTotal.json),
            ("passed", .bool(passed)),
            ("problems", .array(problems.map(JSON.string))),
            ("notes", .array(notes.map(JSON.string))),
        ])
    }
}
