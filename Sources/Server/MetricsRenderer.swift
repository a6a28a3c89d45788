import Loop
import Metrics

extension MetricsRenderer {
    private func renderTLS(_ tls: TLSCredentials, into out: inout PrometheusText) {
        out.family("parley_tls_handshakes_total", .counter, help: "TLS handshakes with clients, by how they ended.")
        for result in TLSHandshakeResult.allCases {
            out.sample("parley_tls_handshakes_total", labels: "result=\"\(result.label)\"", sum { $0.tlsHandshakes[result.rawValue] })
        }
        out.single("parley_tls_handshakes_in_progress", .gauge, help: "TLS handshakes under way (capped by --max-tls-handshakes).",
                   sum { $0.tlsHandshakesInProgress })
        out.family("parley_tls_certificate_reloads_total", .counter, help: "Certificate reloads (SIGHUP), by outcome.")
        out.sample("parley_tls_certificate_reloads_total", labels: "result=\"ok\"", tls.reloads.current)
        out.sample("parley_tls_certificate_reloads_total", labels: "result=\"failed\"", tls.reloadFailures.current)
        out.single("parley_tls_certificate_expiry_timestamp_seconds", .gauge, help: "When the served certificate expires (Unix time).",
                   tls.context.certificateNotAfter ?? 0)
    }
}

/// Renders every loop's counters, summed, in the Prometheus text exposition format (0.0.4).
struct MetricsRenderer: Sendable {
    let loops: [LoopMetrics]
    /// Each loop's iteration-lag histogram.
    let lag: [Histogram]
    let endpointNames: [String]
    let baseline: ResidentBaseline
    let drain: DrainState
    let tls: TLSCredentials?
    /// Series other modules add (sessions, model latencies).
    let sections: [@Sendable () -> String]

    private func sum(_ pick: (LoopMetrics) -> Counter) -> Int { loops.reduce(0) { $0 + pick($1).current } }

    func render() -> String {
        var out = PrometheusText()
        out.family("parley_connections_open", .gauge, help: "Open connections by endpoint (http: not upgraded).")
        // Per-session figures divide by upgraded sessions only: transient HTTP requests (this scrape
        // among them) would otherwise make an idle server report all its memory as one connection's.
        var sessions = 0
        for (i, name) in endpointNames.enumerated() {
            let n = sum { $0.open[i] }
            if i > 0 { sessions += n }
            out.sample("parley_connections_open", labels: "endpoint=\"\(name)\"", n)
        }
        out.single("parley_draining", .gauge, help: "1 from SIGTERM while sessions drain (/readyz answers 503).", drain.isDraining ? 1 : 0)
        out.single("parley_connections_accepted_total", .counter, help: "Connections accepted.", sum { $0.accepted })
        out.family("parley_connections_refused_total", .counter, help: "Connections turned away, by reason.")
        for reason in RefusalReason.allCases {
            out.sample("parley_connections_refused_total", labels: "reason=\"\(reason.label)\"", sum { $0.refused[reason.rawValue] })
        }
        out.family("parley_connections_closed_total", .counter,
                   help: "Connections closed, by WebSocket close code (1006: dropped without a close frame; none: plain HTTP).")
        for i in 0..<CloseLabel.count {
            let n = sum { $0.closed[i] }
            if n > 0 || i == 0 { out.sample("parley_connections_closed_total", labels: "code=\"\(CloseLabel.name(i))\"", n) }
        }
        out.single("parley_websocket_messages_received_total", .counter, help: "WebSocket data messages received.", sum { $0.messagesIn })
        out.single("parley_websocket_messages_sent_total", .counter, help: "WebSocket data messages sent.", sum { $0.messagesOut })
        out.single("parley_network_received_bytes_total", .counter, help: "Bytes read from client sockets.", sum { $0.bytesIn })
        out.single("parley_network_sent_bytes_total", .counter, help: "Bytes written to client sockets.", sum { $0.bytesOut })

        let accounted = sum { $0.accountedBytes }
        let resident = ProcessMemory.residentBytes()
        let startupResidentBytes = baseline.bytes
        out.single("parley_accounted_bytes", .gauge, help: "Heap bytes held by connections, as counted by their memory accounts.", accounted)
        out.single("parley_process_resident_memory_bytes", .gauge, help: "Resident set size of the process.", resident)
        out.single("parley_process_proportional_memory_bytes", .gauge,
                   help: "Proportional set size (PSS) of the process: shared pages divided among the processes sharing them, so that it sums across workers.",
                   ProcessMemory.proportionalBytes())
        out.family("parley_process_cpu_seconds_total", .counter, help: "User and system CPU time of the process (summed over the workers with --workers).")
        out.sample("parley_process_cpu_seconds_total", ProcessMemory.cpuSeconds())
        out.single("parley_process_startup_resident_memory_bytes", .gauge, help: "Resident set size once the loops had started, before any connection.",
                   startupResidentBytes)
        out.single("parley_resident_bytes_per_connection", .gauge, help: "(resident - startup resident) / open WebSocket sessions; 0 with none open.",
                   sessions > 0 ? max(0, resident - startupResidentBytes) / sessions : 0)
        out.single("parley_accounted_bytes_per_connection", .gauge, help: "Accounted bytes / open WebSocket sessions; 0 with none open.",
                   sessions > 0 ? accounted / sessions : 0)

        if let tls { renderTLS(tls, into: &out) }
        Histogram.render(lag, into: &out)
        for section in sections { out += section() }
        return out.text
    }
}
