import Loop
import Metrics

/// The server's own series, declared once in its registry: every loop's counters summed at
/// scrape, the process's memory and CPU, TLS, and the loops' lag.
enum ServerMetrics {
    static func declare(in registry: MetricsRegistry, loops: [LoopMetrics], lag: [Histogram], endpointNames: [String],
                        baseline: ResidentBaseline, drain: DrainState, tls: TLSCredentials?) {
        @Sendable func sum(_ pick: (LoopMetrics) -> Counter) -> Int { loops.reduce(0) { $0 + pick($1).current } }
        /// Upgraded sessions only: transient HTTP requests (this scrape among them) would otherwise
        /// make an idle server report all its memory as one connection's.
        @Sendable func sessions() -> Int { endpointNames.indices.dropFirst().reduce(0) { n, i in n + sum { $0.open[i] } } }
        func gauge(_ name: String, _ help: String, _ value: @escaping @Sendable () -> Int) {
            _ = ComputedFamily(name: name, help: help, kind: .gauge, registry: registry, value: value)
        }
        func counter(_ name: String, _ help: String, _ pick: @escaping @Sendable (LoopMetrics) -> Counter) {
            _ = ComputedFamily(name: name, help: help, kind: .counter, registry: registry) { $0.add(sum(pick)) }
        }

        _ = ComputedFamily(name: "parley_connections_open", help: "Open connections by endpoint (http: not upgraded).", kind: .gauge, registry: registry) { samples in
            for (i, name) in endpointNames.enumerated() { samples.add(EndpointLabel(labelValue: name), sum { $0.open[i] }) }
        }
        gauge("parley_draining", "1 from SIGTERM while sessions drain (/readyz answers 503).") { drain.isDraining ? 1 : 0 }
        counter("parley_connections_accepted_total", "Connections accepted.") { $0.accepted }
        _ = ComputedFamily(name: "parley_connections_refused_total", help: "Connections turned away, by reason.", kind: .counter, registry: registry) { samples in
            for reason in RefusalReason.allCases { samples.add(reason, sum { $0.refused[reason.rawValue] }) }
        }
        _ = ComputedFamily(name: "parley_connections_dropped_total",
                           help: "Connections the server ended on its own, by why: a client not reading past --max-outbound-bytes (told with 1008), no pong, no answer to our close.",
                           kind: .counter, registry: registry) { samples in
            for reason in DropReason.allCases { samples.add(reason, sum { $0.dropped[reason.rawValue] }) }
        }
        _ = ComputedFamily(name: "parley_connections_closed_total",
                           help: "Connections closed, by WebSocket close code (1006: dropped without a close frame; none: plain HTTP).",
                           kind: .counter, registry: registry) { samples in
            for i in 0..<CloseLabel.count {
                let n = sum { $0.closed[i] }
                if n > 0 || i == 0 { samples.add(CloseLabel(index: i), n) }
            }
        }
        counter("parley_websocket_messages_received_total", "WebSocket data messages received.") { $0.messagesIn }
        counter("parley_websocket_messages_sent_total", "WebSocket data messages sent.") { $0.messagesOut }
        counter("parley_network_received_bytes_total", "Bytes read from client sockets.") { $0.bytesIn }
        counter("parley_network_sent_bytes_total", "Bytes written to client sockets.") { $0.bytesOut }

        gauge("parley_accounted_bytes", "Heap bytes held by connections and sessions (calls too), as counted by their memory accounts.") {
            loops.reduce(0) { $0 + $1.ledger.total }
        }
        _ = ComputedFamily(name: "parley_accounted_bytes_by_carrier",
                           help: "parley_accounted_bytes by what holds them: a connection's endpoint (http until it upgrades), or a session's carrier (sip, webrtc, stream, parked, relayed), or ended calls kept readable (ended_calls).",
                           kind: .gauge, registry: registry) { samples in
            for (i, name) in endpointNames.enumerated() { samples.add(CarrierLabel(labelValue: name), loops.reduce(0) { $0 + $1.ledger.current(endpoint: i) }) }
            for carrier in MemoryLedger.Carrier.allCases {
                samples.add(CarrierLabel(labelValue: carrier.labelValue), loops.reduce(0) { $0 + $1.ledger.current(carrier) })
            }
        }
        gauge("parley_process_resident_memory_bytes", "Resident set size of the process.") { ProcessMemory.residentBytes() }
        gauge("parley_process_heap_in_use_bytes", "Heap bytes allocated and not freed (glibc's mallinfo2), every arena's and the blocks mapped on their own.") {
            ProcessMemory.heapInUseBytes()
        }
        gauge("parley_process_proportional_memory_bytes",
              "Proportional set size (PSS) of the process: shared pages divided among the processes sharing them, so that it sums across workers.") {
            ProcessMemory.proportionalBytes()
        }
        _ = ComputedFamily(name: "parley_process_cpu_seconds_total", help: "User and system CPU time of the process (summed over the workers with --workers).",
                           kind: .counter, registry: registry) { $0.add(ProcessMemory.cpuSeconds()) }
        gauge("parley_process_startup_resident_memory_bytes", "Resident set size once the loops had started, before any connection.") { baseline.bytes }
        gauge("parley_resident_bytes_per_connection", "(resident - startup resident) / open WebSocket sessions; 0 with none open.") {
            let sessions = sessions()
            return sessions > 0 ? max(0, ProcessMemory.residentBytes() - baseline.bytes) / sessions : 0
        }
        gauge("parley_accounted_bytes_per_connection", "Accounted bytes of WebSocket sessions (relayed ones included; not calls, ended calls kept, stream connections or parked sessions) / open WebSocket sessions; 0 with none open.") {
            let sessions = sessions()
            return sessions > 0 ? loops.reduce(0) { $0 + $1.ledger.connectionTotal } / sessions : 0
        }

        if let tls {
            _ = ComputedFamily(name: "parley_tls_handshakes_total", help: "TLS handshakes with clients, by how they ended.", kind: .counter, registry: registry) { samples in
                for result in TLSHandshakeResult.allCases { samples.add(result, sum { $0.tlsHandshakes[result.rawValue] }) }
            }
            gauge("parley_tls_handshakes_in_progress", "TLS handshakes under way (capped by --max-tls-handshakes).") { sum { $0.tlsHandshakesInProgress } }
            _ = ComputedFamily(name: "parley_tls_certificate_reloads_total", help: "Certificate reloads (SIGHUP), by outcome.", kind: .counter, registry: registry) { samples in
                samples.add(CertificateReload.ok, tls.reloads.current)
                samples.add(CertificateReload.failed, tls.reloadFailures.current)
            }
            gauge("parley_tls_certificate_expiry_timestamp_seconds", "When the served certificate expires (Unix time).") { tls.context.certificateNotAfter ?? 0 }
        }
        _ = SummedHistogram(lag, registry: registry)
    }
}

/// How a certificate reload (SIGHUP) ended.
enum CertificateReload: String, MetricLabel {
    static let labelName = "result"
    case ok, failed
}
