import JSON

/// Everything `hold` found, printed in two parts (once connected, then after the hold) and
/// optionally written as JSON.
struct HoldSummary {
    let target: LoadTarget
    let requested: Int
    let processes: Int
    let sources: Int
    let rate: Double
    let holdSeconds: Double

    /// The workers' reports added together, once every connection had opened or failed.
    var connect = HoldReport()
    /// Seconds from the first connect to the last open.
    var connectSeconds = 0.0
    var serverBefore: ServerMetrics?
    var serverConnected: ServerMetrics?
    var serverAfterHold: ServerMetrics?
    /// Client CPU when connecting was over (parent plus workers' own counts).
    var cpuAtConnect = CPUTime.zero
    /// The workers' final reports: how many were still open when they were told to stop.
    var atEnd = HoldReport()
    var heldSeconds = 0.0
    /// Parent and all workers, from getrusage once the workers have been reaped.
    var cpuTotal = CPUTime.zero
    /// Why the run failed; empty when it passed.
    var problems: [String] = []
    var notes: [String] = []

    var passed: Bool { problems.isEmpty }

    var connectRate: Double { connectSeconds > 0 ? Double(connect.connected) / connectSeconds : 0 }

    /// Echo sessions the server reports, less those open before this run began.
    func serverHeld(_ metrics: ServerMetrics?) -> Int? {
        metrics.map { $0.sessionsOpen - (serverBefore?.sessionsOpen ?? 0) }
    }

    // MARK: Text

    var connectSection: String {
        var lines = ["", "== connected  (\(Format.grouped(requested)) sessions to \(target), \(processes) process\(processes == 1 ? "" : "es"), \(sources) source addresses)"]
        lines.append(Format.row("sessions open", "\(Format.grouped(connect.open)) of \(Format.grouped(requested))  (connected \(Format.grouped(connect.connected)), failed \(Format.grouped(connect.failedCount)), dropped \(Format.grouped(connect.droppedCount)))"))
        lines.append(Format.row("connect rate", "\(Format.grouped(Int(connectRate.rounded()))) conn/s  (\(Format.fixed(connectSeconds, 2)) s from first connect to last open; limit \(Format.grouped(Int(rate))) conn/s per process)"))
        if connect.handshake.count > 0 {
            let h = connect.handshake
            lines.append(Format.row("connect to 101", "p50 \(LatencyRecorder.format(nanoseconds: h.percentile(50)))  p99 \(LatencyRecorder.format(nanoseconds: h.percentile(99)))  max \(LatencyRecorder.format(nanoseconds: h.maximum))"))
        }
        lines.append(Format.row("failures", Format.reasons(connect.failed)))
        if connect.droppedCount > 0 { lines.append(Format.row("dropped", Format.reasons(connect.dropped))) }
        if let server = serverConnected {
            lines += serverRows(server)
        } else {
            lines.append(Format.row("server", "metrics unavailable"))
        }
        lines.append(Format.row("client CPU", "\(Format.fixed(cpuAtConnect.total, 2)) s user+sys so far  (user \(Format.fixed(cpuAtConnect.user, 2)) s, sys \(Format.fixed(cpuAtConnect.system, 2)) s; all workers and parent)"))
        return lines.joined(separator: "\n")
    }

    private func serverRows(_ server: ServerMetrics) -> [String] {
        let open = server.sessionsOpen
        let rss = server.residentBytes, startup = server.startupResidentBytes
        var rows = [
            Format.row("server open", "\(Format.grouped(open)) WebSocket sessions (\(Format.grouped(server.openTotal)) connections in all, this scrape included)"),
            Format.row("server RSS", "\(Format.bytes(rss))  (startup \(Format.bytes(startup)), growth \(Format.bytes(rss - startup)))"),
        ]
        if open > 0 {
            let growth = Int(((rss - startup) / Double(open)).rounded())
            let whole = Int((rss / Double(open)).rounded())
            rows.append(Format.row("resident/conn", "\(Format.grouped(growth)) B  ((rss - startup) / open)   \(Format.grouped(whole)) B  (rss / open)   server gauge \(Format.grouped(Int(server.residentBytesPerConnection))) B"))
            if let perSession = server.proportionalBytesPerEchoSession {
                rows.append(Format.row("whole server", "PSS \(Format.bytes(server.proportionalBytes)) = \(Format.grouped(Int(perSession))) B per session, everything included (\(server.workers) process\(server.workers == 1 ? "" : "es"), shared pages counted once)"))
            }
            if server.workers > 1, let low = server.workerResidentBytes.min(), let high = server.workerResidentBytes.max() {
                rows.append(Format.row("per worker", "RSS \(Format.bytes(low)) to \(Format.bytes(high)) each, \(Format.grouped(open / server.workers)) sessions each on average"))
            }
            if server.samples["parley_accounted_bytes_per_connection"] != nil {
                rows.append(Format.row("accounted/conn", "\(Format.grouped(Int(server.accountedBytesPerConnection))) B  (heap the server's memory accounts attribute to each connection)"))
            }
        }
        rows.append(Format.row("server refused", Format.reasons(server.refused)))
        return rows
    }

    var holdSection: String {
        var lines = ["", "== after holding \(Format.fixed(heldSeconds, 1)) s"]
        lines.append(Format.row("client open", "\(Format.grouped(atEnd.open)) of \(Format.grouped(requested))  (dropped during the run: \(Format.reasons(atEnd.dropped)); server pings answered: \(Format.grouped(atEnd.pongs)))"))
        if let server = serverAfterHold {
            lines.append(Format.row("server open", "\(Format.grouped(server.sessionsOpen)) WebSocket sessions"))
            lines.append(Format.row("server RSS", Format.bytes(server.residentBytes)))
            if server.sessionsOpen > 0 {
                let growth = Int(((server.residentBytes - server.startupResidentBytes) / Double(server.sessionsOpen)).rounded())
                lines.append(Format.row("resident/conn", "\(Format.grouped(growth)) B  ((rss - startup) / open)"))
                if let perSession = server.proportionalBytesPerEchoSession {
                    lines.append(Format.row("whole server", "PSS \(Format.bytes(server.proportionalBytes)) = \(Format.grouped(Int(perSession))) B per session, everything included"))
                }
            }
        } else {
            lines.append(Format.row("server", "metrics unavailable"))
        }
        lines.append(Format.row("client CPU", "\(Format.fixed(cpuTotal.total, 2)) s user+sys in all  (user \(Format.fixed(cpuTotal.user, 2)) s, sys \(Format.fixed(cpuTotal.system, 2)) s; workers reaped, plus parent)"))
        for note in notes { lines.append(Format.row("note", note)) }
        lines.append("")
        if passed {
            lines.append("PASS: all \(Format.grouped(requested)) sessions connected and were still open after the hold")
        } else {
            lines.append("FAIL: " + problems.joined(separator: "; "))
        }
        return lines.joined(separator: "\n")
    }


    // MARK: JSON

    var json: JSON {
        func server(_ m: ServerMetrics?) -> JSON {
            guard let m else { return .null }
            let open = m.sessionsOpen
            return .object([
                ("echo_open", .int(open)),
                ("open_total", .int(m.openTotal)),
                ("resident_bytes", .number(m.residentBytes)),
                ("startup_resident_bytes", .number(m.startupResidentBytes)),
                ("resident_growth_bytes_per_connection", open > 0 ? .number(((m.residentBytes - m.startupResidentBytes) / Double(open)).rounded()) : .null),
                ("resident_bytes_per_connection_whole", open > 0 ? .number((m.residentBytes / Double(open)).rounded()) : .null),
                ("server_resident_bytes_per_connection", .number(m.residentBytesPerConnection)),
                ("server_accounted_bytes_per_connection", .number(m.accountedBytesPerConnection)),
                ("proportional_bytes", .number(m.proportionalBytes)),
                ("proportional_bytes_per_connection", m.proportionalBytesPerEchoSession.map(JSON.number) ?? .null),
                ("workers", .int(m.workers)),
                ("worker_resident_bytes", .array(m.workerResidentBytes.map { .number($0) })),
                ("refused", .counts(m.refused)),
            ])
        }
        let h = connect.handshake
        return .object([
            ("command", .string("hold")),
            ("url", .string(target.url)),
            ("requested", .int(requested)),
            ("processes", .int(processes)),
            ("sources", .int(sources)),
            ("rate_per_process", .number(rate)),
            ("connected", .int(connect.connected)),
            ("open_after_connect", .int(connect.open)),
            ("failed", .counts(connect.failed)),
            ("connect_seconds", .number(connectSeconds)),
            ("connect_rate", .number(connectRate.rounded())),
            ("handshake_ns", .object([("p50", .number(Double(h.percentile(50)))), ("p99", .number(Double(h.percentile(99)))), ("max", .number(Double(h.maximum)))])),
            ("server_before", server(serverBefore)),
            ("server_connected", server(serverConnected)),
            ("server_after_hold", server(serverAfterHold)),
            ("held_seconds", .number(heldSeconds)),
            ("open_after_hold", .int(atEnd.open)),
            ("dropped", .counts(atEnd.dropped)),
            ("pings_answered", .int(atEnd.pongs)),
            ("client_cpu_at_connect", cpuAtConnect.json),
            ("client_cpu_total", cpuTotal.json),
            ("passed", .bool(passed)),
            ("problems", .array(problems.map(JSON.string))),
        ])
    }
}
