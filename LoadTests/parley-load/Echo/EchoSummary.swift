import JSON

/// What `echo` prints and writes: throughput, the latency distribution, errors, and the client's
/// CPU beside them so that a reader can see whether the client was the bottleneck.
struct EchoSummary {
    let target: LoadTarget
    let processes: Int
    let size: Int
    let warmup: Double
    let result: EchoResult
    /// Parent and reaped workers, over the whole run (connecting and closing too).
    let cpuTotal: CPUTime
    var problems: [String] = []

    var passed: Bool { problems.isEmpty }

    /// Cores' worth of CPU the client used while measuring: 1.0 is one core flat out.
    var clientCores: Double {
        result.measuredSeconds > 0 ? result.cpuMeasured.total / result.measuredSeconds : 0
    }

    /// The server's cores over the window, and its CPU per message echoed (with `--server-pid`).
    var serverCores: Double? {
        result.measuredSeconds > 0 ? result.serverCPUSeconds.map { $0 / result.measuredSeconds } : nil
    }
    var serverMicrosecondsPerMessage: Double? {
        result.messages > 0 ? result.serverCPUSeconds.map { $0 * 1e6 / Double(result.messages) } : nil
    }

    var text: String {
        let r = result, h = r.latency
        func ms(_ p: Double) -> String { LatencyRecorder.format(nanoseconds: h.percentile(p)) }
        var lines = [
            "",
            "== echo  (\(Format.grouped(r.connections)) connections to \(target), \(processes) process\(processes == 1 ? "" : "es"), \(size)-byte text messages)",
            row("measured", "\(Format.fixed(r.measuredSeconds, 2)) s after \(Format.fixed(warmup, 1)) s warm-up; \(Format.grouped(r.opened)) of \(Format.grouped(r.connections)) connections opened"),
            row("messages", "\(Format.grouped(r.messages)) round trips  (\(Format.grouped(Int(r.messagesPerSecond.rounded()))) msg/s)"),
            row("latency", h.count == 0 ? "no round trips measured" : "p50 \(ms(50))   p90 \(ms(90))   p99 \(ms(99))   p99.9 \(ms(99.9))   max \(LatencyRecorder.format(nanoseconds: h.maximum))   (mean \(LatencyRecorder.format(nanoseconds: UInt64(h.mean))))"),
            row("errors", "\(Format.grouped(r.errors))  (connect failures: \(Format.reasons(r.failed)); dropped: \(Format.reasons(r.dropped)); bad echoes: \(r.badEchoes))"),
            row("client CPU", "\(Format.fixed(r.cpuMeasured.total, 2)) s user+sys while measuring = \(Format.fixed(clientCores, 2)) of \(Cores.online) cores  (user \(Format.fixed(r.cpuMeasured.user, 2)) s, sys \(Format.fixed(r.cpuMeasured.system, 2)) s; \(Format.fixed(cpuTotal.total, 2)) s over the whole run)"),
        ]
        if let serverCores, let perMessage = serverMicrosecondsPerMessage {
            lines.append(row("server CPU", "\(Format.fixed(serverCores, 2)) of \(Cores.online) cores while measuring = \(Format.fixed(perMessage, 2)) µs a message echoed"))
        }
        if let steal = r.stealFraction { lines.append(row("steal", "\(Format.fixed(steal * 100, 1)) % of the machine's CPU time while measuring")) }
        // Each client process is one thread: near 100 % of a core it is the limit, not the server.
        let busy = clientCores / Double(processes)
        if busy >= 0.8 {
            lines.append(row("note", "each client process was busy \(Int((100 * busy).rounded()))% of one core while measuring: the client may be the bottleneck (try --processes \(processes + 1))"))
        }
        if clientCores >= 0.5 * Double(Cores.online) {
            lines.append(row("note", "the client used \(Int((100 * clientCores / Double(Cores.online)).rounded()))% of this machine's \(Cores.online) cores while measuring, cores the server shares"))
        }
        lines.append("")
        lines.append(passed ? "PASS: no errors" : "FAIL: " + problems.joined(separator: "; "))
        return lines.joined(separator: "\n")
    }

    private func row(_ label: String, _ value: String) -> String {
        "  " + label + String(repeating: " ", count: max(1, 13 - label.count)) + value
    }

    var json: JSON {
        let h = result.latency
        func p(_ q: Double) -> JSON { .number(Double(h.percentile(q))) }
        return .object([
            ("command", .string("echo")),
            ("url", .string(target.url)),
            ("processes", .int(processes)),
            ("size", .int(size)),
            ("warmup_seconds", .number(warmup)),
            ("result", result.json),
            ("latency_ns", .object([("p50", p(50)), ("p90", p(90)), ("p99", p(99)), ("p99_9", p(99.9)), ("max", .number(Double(h.maximum))), ("mean", .number(h.mean.rounded()))])),
            ("errors", .int(result.errors)),
            ("client_cores_while_measuring", .number(clientCores)),
            ("server_cores_while_measuring", serverCores.map(JSON.number) ?? .null),
            ("server_microseconds_per_message", serverMicrosecondsPerMessage.map(JSON.number) ?? .null),
            ("steal_fraction_while_measuring", result.stealFraction.map(JSON.number) ?? .null),
            ("client_cpu_total", cpuTotal.json),
            ("passed", .bool(passed)),
            ("problems", .array(problems.map(JSON.string))),
        ])
    }
}
