import Synchronization

/// A counter or gauge written by one loop and read by whoever scrapes. Relaxed ordering: each
/// value is independent and only ever summed.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    @inline(__always) func add(_ n: Int) { _ = value.add(n, ordering: .relaxed) }
    var current: Int { value.load(ordering: .relaxed) }
}

/// Close codes get a fixed set of labels so the metric's cardinality stays bounded.
enum CloseLabel {
    /// 1000...1015, then "other" for library/application codes, then "none" for plain HTTP.
    static let count = 18
    static func index(_ code: WebSocketCloseCode?) -> Int {
        guard let code else { return 17 }
        return (1000...1015).contains(code.rawValue) ? Int(code.rawValue - 1000) : 16
    }
    static func name(_ index: Int) -> String {
        switch index {
        case 0..<16: return String(1000 + index)
        case 16: return "other"
        default: return "none"
        }
    }
}

/// Why an accepted-or-attempted connection was turned away.
enum RefusalReason: Int, CaseIterable {
    /// accept(2) failed with EMFILE/ENFILE.
    case descriptorLimit
    /// A WebSocket upgrade past `maxConnections` sessions, or any connection past the hard cap.
    case connectionLimit
    /// A TLS connection while `maxTLSHandshakes` handshakes were already in progress.
    case tlsHandshakeLimit
    var label: String { ["descriptor_limit", "connection_limit", "tls_handshake_limit"][rawValue] }
}

/// How a TLS handshake ended.
enum TLSHandshakeResult: Int, CaseIterable {
    case established
    /// A protocol or certificate error.
    case failed
    /// Not complete within `tlsHandshakeTimeout`.
    case timedOut
    /// The client left first (or the server shut down).
    case closed
    var label: String { ["ok", "failed", "timeout", "closed"][rawValue] }
}

/// The counters of one event loop.
final class LoopMetrics: Sendable {
    /// Seconds; the upper bounds of the iteration-lag histogram.
    static let lagBounds: [Double] = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]

    let open: [Counter]
    let accepted = Counter()
    let refused = RefusalReason.allCases.map { _ in Counter() }
    let closed = (0..<CloseLabel.count).map { _ in Counter() }
    let messagesIn = Counter()
    let messagesOut = Counter()
    let bytesIn = Counter()
    let bytesOut = Counter()
    let accountedBytes = Counter()
    let tlsHandshakes = TLSHandshakeResult.allCases.map { _ in Counter() }
    let tlsHandshakesInProgress = Counter()
    let lagBuckets = LoopMetrics.lagBounds.map { _ in Counter() }
    let lagCount = Counter()
    let lagNanoseconds = Counter()

    init(endpoints: Int) {
        open = (0..<endpoints).map { _ in Counter() }
    }

    func observeLag(nanoseconds: UInt64) {
        let seconds = Double(nanoseconds) / 1e9
        if let i = Self.lagBounds.firstIndex(where: { seconds <= $0 }) { lagBuckets[i].add(1) }
        lagCount.add(1)
        lagNanoseconds.add(Int(nanoseconds))
    }
}

extension MetricsRenderer {
    private func renderTLS(_ tls: TLSCredentials, into out: inout String, sum: ((LoopMetrics) -> Counter) -> Int) {
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        family("parley_tls_handshakes_total", "counter", "TLS handshakes with clients, by how they ended.")
        for result in TLSHandshakeResult.allCases {
            out += "parley_tls_handshakes_total{result=\"\(result.label)\"} \(sum { $0.tlsHandshakes[result.rawValue] })\n"
        }
        family("parley_tls_handshakes_in_progress", "gauge", "TLS handshakes under way (capped by --max-tls-handshakes).")
        out += "parley_tls_handshakes_in_progress \(sum { $0.tlsHandshakesInProgress })\n"
        family("parley_tls_certificate_reloads_total", "counter", "Certificate reloads (SIGHUP), by outcome.")
        out += "parley_tls_certificate_reloads_total{result=\"ok\"} \(tls.reloads.current)\n"
        out += "parley_tls_certificate_reloads_total{result=\"failed\"} \(tls.reloadFailures.current)\n"
        family("parley_tls_certificate_expiry_timestamp_seconds", "gauge", "When the served certificate expires (Unix time).")
        out += "parley_tls_certificate_expiry_timestamp_seconds \(tls.context.certificateNotAfter ?? 0)\n"
    }
}

/// Renders every loop's counters, summed, in the Prometheus text exposition format (0.0.4).
struct MetricsRenderer: Sendable {
    let loops: [LoopMetrics]
    let endpointNames: [String]
    let baseline: ResidentBaseline
    let tls: TLSCredentials?
    /// Series other modules add (sessions, model latencies).
    let sections: [@Sendable () -> String]

    func render() -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        func sum(_ pick: (LoopMetrics) -> Counter) -> Int { loops.reduce(0) { $0 + pick($1).current } }

        family("parley_connections_open", "gauge", "Open connections by endpoint (http: not upgraded).")
        // Per-session figures divide by upgraded sessions only: transient HTTP requests (this scrape
        // among them) would otherwise make an idle server report all its memory as one connection's.
        var sessions = 0
        for (i, name) in endpointNames.enumerated() {
            let n = sum { $0.open[i] }
            if i > 0 { sessions += n }
            out += "parley_connections_open{endpoint=\"\(name)\"} \(n)\n"
        }
        family("parley_connections_accepted_total", "counter", "Connections accepted.")
        out += "parley_connections_accepted_total \(sum { $0.accepted })\n"
        family("parley_connections_refused_total", "counter", "Connections turned away, by reason.")
        for reason in RefusalReason.allCases {
            out += "parley_connections_refused_total{reason=\"\(reason.label)\"} \(sum { $0.refused[reason.rawValue] })\n"
        }
        family("parley_connections_closed_total", "counter", "Connections closed, by WebSocket close code (1006: dropped without a close frame; none: plain HTTP).")
        for i in 0..<CloseLabel.count {
            let n = sum { $0.closed[i] }
            if n > 0 || i == 0 { out += "parley_connections_closed_total{code=\"\(CloseLabel.name(i))\"} \(n)\n" }
        }
        family("parley_websocket_messages_received_total", "counter", "WebSocket data messages received.")
        out += "parley_websocket_messages_received_total \(sum { $0.messagesIn })\n"
        family("parley_websocket_messages_sent_total", "counter", "WebSocket data messages sent.")
        out += "parley_websocket_messages_sent_total \(sum { $0.messagesOut })\n"
        family("parley_network_received_bytes_total", "counter", "Bytes read from client sockets.")
        out += "parley_network_received_bytes_total \(sum { $0.bytesIn })\n"
        family("parley_network_sent_bytes_total", "counter", "Bytes written to client sockets.")
        out += "parley_network_sent_bytes_total \(sum { $0.bytesOut })\n"

        let accounted = sum { $0.accountedBytes }
        let resident = ProcessMemory.residentBytes()
        let startupResidentBytes = baseline.bytes
        family("parley_accounted_bytes", "gauge", "Heap bytes held by connections, as counted by their memory accounts.")
        out += "parley_accounted_bytes \(accounted)\n"
        family("parley_process_resident_memory_bytes", "gauge", "Resident set size of the process.")
        out += "parley_process_resident_memory_bytes \(resident)\n"
        family("parley_process_proportional_memory_bytes", "gauge", "Proportional set size (PSS) of the process: shared pages divided among the processes sharing them, so that it sums across workers.")
        out += "parley_process_proportional_memory_bytes \(ProcessMemory.proportionalBytes())\n"
        family("parley_process_cpu_seconds_total", "counter", "User and system CPU time of the process (summed over the workers with --workers).")
        out += "parley_process_cpu_seconds_total \(ProcessMemory.cpuSeconds())\n"
        family("parley_process_startup_resident_memory_bytes", "gauge", "Resident set size once the loops had started, before any connection.")
        out += "parley_process_startup_resident_memory_bytes \(startupResidentBytes)\n"
        family("parley_resident_bytes_per_connection", "gauge", "(resident - startup resident) / open WebSocket sessions; 0 with none open.")
        out += "parley_resident_bytes_per_connection \(sessions > 0 ? max(0, resident - startupResidentBytes) / sessions : 0)\n"
        family("parley_accounted_bytes_per_connection", "gauge", "Accounted bytes / open WebSocket sessions; 0 with none open.")
        out += "parley_accounted_bytes_per_connection \(sessions > 0 ? accounted / sessions : 0)\n"

        if let tls { renderTLS(tls, into: &out, sum: sum) }

        family("parley_loop_iteration_seconds", "histogram", "Time an event-loop iteration spent handling ready events and timers: how late the next event can be served.")
        var cumulative = 0
        for (i, bound) in LoopMetrics.lagBounds.enumerated() {
            cumulative += sum { $0.lagBuckets[i] }
            out += "parley_loop_iteration_seconds_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        let count = sum { $0.lagCount }
        out += "parley_loop_iteration_seconds_bucket{le=\"+Inf\"} \(count)\n"
        out += "parley_loop_iteration_seconds_sum \(Double(sum { $0.lagNanoseconds }) / 1e9)\n"
        out += "parley_loop_iteration_seconds_count \(count)\n"
        for section in sections { out += section() }
        return out
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Resident memory once the server had started, before any connection: the base that per-connection
/// figures are measured from.
final class ResidentBaseline: Sendable {
    private let value = Atomic<Int>(0)
    var bytes: Int { value.load(ordering: .relaxed) }
    func record() { value.store(ProcessMemory.residentBytes(), ordering: .relaxed) }
}

enum ProcessMemory {
    /// PSS from /proc/self/smaps_rollup ("Pss:  N kB"); 0 where the kernel has no such file.
    static func proportionalBytes() -> Int {
        guard let text = readProcFile("/proc/self/smaps_rollup") else { return 0 }
        for line in text.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("Pss:".utf8)) {
            let digits = line.drop { !(48...57).contains($0) }.prefix { (48...57).contains($0) }
            return (Int(String(decoding: digits, as: UTF8.self)) ?? 0) * 1024
        }
        return 0
    }

    /// User plus system CPU seconds of the whole process, every thread, from getrusage(2).
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Resident bytes from /proc/self/statm (its second field, in pages).
    static func residentBytes() -> Int {
        guard let text = readProcFile("/proc/self/statm") else { return 0 }
        let fields = text.split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The first kilobyte of a /proc file: all that these small files hold. nil if unreadable
    /// (at the descriptor limit, say).
    private static func readProcFile(_ path: String) -> ArraySlice<UInt8>? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let n = read(fd, &buffer, buffer.count)
        return n > 0 ? buffer[0..<n] : nil
    }
}
