import Loop
import TLS
#if canImport(Glibc)
import Glibc
#endif

/// The server's own figures, read from its `GET /metrics` (Prometheus text format 0.0.4).
struct ServerMetrics {
    /// Every sample, keyed by name and labels as written: `parley_connections_open{endpoint="echo"}`.
    let samples: [String: Double]

    struct Unreachable: Error, CustomStringConvertible {
        let description: String
    }

    init(parsing text: some StringProtocol) {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            // The value is the last field; an optional timestamp would follow it, which parley never writes.
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        self.samples = samples
    }

    /// One series: `value("parley_connections_open", labels: #"endpoint="echo""#)`.
    func value(_ name: String, labels: String = "") -> Double? {
        samples[labels.isEmpty ? name : "\(name){\(labels)}"]
    }

    /// Every label set of `name`, keyed by its labels.
    func series(_ name: String) -> [String: Double] {
        var out: [String: Double] = [:]
        for (key, value) in samples where key.hasPrefix(name + "{") && key.hasSuffix("}") {
            out[String(key.dropFirst(name.count + 1).dropLast())] = value
        }
        return out
    }

    /// WebSocket sessions on every endpoint (echo, realtime, ws…): what `hold` connected, wherever it pointed.
    var sessionsOpen: Int { openTotal - Int(value("parley_connections_open", labels: #"endpoint="http""#) ?? 0) }
    /// Sessions on /v1/realtime.
    var realtimeOpen: Int { Int(value("parley_connections_open", labels: #"endpoint="realtime""#) ?? 0) }
    /// All endpoints, plain HTTP included (this scrape's own connection among them).
    var openTotal: Int { Int(series("parley_connections_open").values.reduce(0, +)) }
    var residentBytes: Double { value("parley_process_resident_memory_bytes") ?? 0 }
    var startupResidentBytes: Double { value("parley_process_startup_resident_memory_bytes") ?? 0 }
    var residentBytesPerConnection: Double { value("parley_resident_bytes_per_connection") ?? 0 }
    /// PSS, summed over the processes: what the whole server really takes, shared pages counted once.
    /// The server's CPU seconds so far (all its processes), where it says.
    var cpuSeconds: Double? { value("parley_process_cpu_seconds_total") }
    var proportionalBytes: Double { value("parley_process_proportional_memory_bytes") ?? 0 }
    /// The whole server's PSS per open echo session, rounded; nil without PSS or sessions.
    var proportionalBytesPerEchoSession: Double? {
        sessionsOpen > 0 && proportionalBytes > 0 ? (proportionalBytes / Double(sessionsOpen)).rounded() : nil
    }
    /// Worker processes behind the port (1 without --workers).
    var workers: Int { max(1, series("parley_worker_resident_memory_bytes").count) }
    /// Each worker's resident memory (empty without --workers).
    var workerResidentBytes: [Double] { series("parley_worker_resident_memory_bytes").map(\.1) }
    var accountedBytesPerConnection: Double { value("parley_accounted_bytes_per_connection") ?? 0 }
    /// Refusals by reason, `descriptor_limit` rather than `reason="descriptor_limit"`.
    var refused: [String: Int] {
        var out: [String: Int] = [:]
        for (labels, value) in series("parley_connections_refused_total") {
            let reason = labels.replacingPrefix("reason=\"", with: "").dropLast(labels.hasSuffix("\"") ? 1 : 0)
            out[String(reason)] = Int(value)
        }
        return out
    }

    /// A labelled counter's series keyed by one label's value:
    /// `counts("parley_session_responses_total", by: "status")` → `["completed": 12, …]`.
    func counts(_ name: String, by label: String) -> [String: Int] {
        var out: [String: Int] = [:]
        for (labels, value) in series(name) {
            for pair in labels.split(separator: ",") where pair.hasPrefix(label + "=\"") && pair.hasSuffix("\"") {
                out[String(pair.dropFirst(label.count + 2).dropLast()), default: 0] += Int(value)
            }
        }
        return out
    }

    // MARK: Fetching

    /// GET /metrics over a fresh connection to the target's host and port, bounded by `timeoutSeconds`.
    static func fetch(from target: LoadTarget, timeoutSeconds: Double = 5) throws(Unreachable) -> ServerMetrics {
        let deadline = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(timeoutSeconds)
        let whereTo = "the server at \(target.hostHeader)"
        let fd: Int32
        switch ClientSocket.connect(to: target.address, from: nil) {
        case .success(let socket): fd = socket
        case .failure(let failure): throw Unreachable(description: "cannot reach \(whereTo): \(failure)")
        }
        defer { ClientSocket.close(fd) }

        guard wait(fd, for: Int16(POLLOUT), until: deadline) else {
            throw Unreachable(description: "cannot reach \(whereTo): no answer to connect within \(timeoutSeconds) s")
        }
        let error = ClientSocket.pendingError(fd)
        guard error == 0 else {
            throw Unreachable(description: "cannot reach \(whereTo): connect: \(String(cString: strerror(error))) (\(ErrnoName.of(error)))")
        }
        let tls = try handshake(fd, target, until: deadline, whereTo: whereTo)
        let request = Array("GET /metrics HTTP/1.1\r\nHost: \(target.hostHeader)\r\nConnection: close\r\nUser-Agent: parley-load\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            guard wait(fd, for: Int16(POLLOUT), until: deadline) else { throw Unreachable(description: "\(whereTo) did not take the request in time") }
            switch request[sent...].withUnsafeBytes({ ClientTransport.write(fd, tls, $0) }) {
            case .transferred(let n): sent += n
            case .wouldBlock: continue
            case .endOfFile, .failed, .tlsFailed: throw Unreachable(description: "\(whereTo) closed the connection during GET /metrics")
            }
        }

        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        reading: while response.count < 64 << 20 {
            if let complete = completeResponse(response) { return try parse(complete, whereTo: whereTo) }
            guard wait(fd, for: Int16(POLLIN), until: deadline) else {
                throw Unreachable(description: "\(whereTo) did not answer GET /metrics within \(timeoutSeconds) s")
            }
            switch chunk.withUnsafeMutableBytes({ ClientTransport.read(fd, tls, into: $0) }) {
            case .transferred(let n): response += chunk[0..<n]
            case .wouldBlock: continue
            case .endOfFile: break reading
            case .failed(let code): throw Unreachable(description: "\(whereTo): reading /metrics: \(ErrnoName.of(code))")
            case .tlsFailed(let why): throw Unreachable(description: "\(whereTo): reading /metrics: \(why)")
            }
        }
        return try parse(response, whereTo: whereTo)
    }

    /// For a wss:// target, the TLS handshake on the connected socket; nil for ws://.
    private static func handshake(_ fd: Int32, _ target: LoadTarget, until deadline: UInt64, whereTo: String) throws(Unreachable) -> TLSStream? {
        guard let context = target.tls else { return nil }
        let tls: TLSStream
        do { tls = try TLSStream(context: context, fd: fd, serverName: target.serverName) } catch {
            throw Unreachable(description: "\(whereTo): \(error)")
        }
        while true {
            let event: Int16
            switch tls.handshake() {
            case .transferred: return tls
            case .wantRead: event = Int16(POLLIN)
            case .wantWrite: event = Int16(POLLOUT)
            case .closed: throw Unreachable(description: "\(whereTo) closed the connection in the TLS handshake")
            case .failed(let error): throw Unreachable(description: "\(whereTo): \(error)")
            }
            guard wait(fd, for: event, until: deadline) else { throw Unreachable(description: "\(whereTo): TLS handshake timed out") }
        }
    }

    /// poll(2) for one descriptor, until the monotonic deadline.
    private static func wait(_ fd: Int32, for events: Int16, until deadline: UInt64) -> Bool {
        while true {
            let now = MonotonicClock.nanoseconds()
            guard now < deadline else { return false }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let n = poll(&entry, 1, Int32(min(1000, (deadline - now) / 1_000_000 + 1)))
            if n > 0 { return true }  // ready, or an error the next call will report
            if n < 0 && errno != EINTR { return false }
        }
    }

    /// The response once its head and Content-Length body have arrived; nil while incomplete.
    private static func completeResponse(_ bytes: [UInt8]) -> [UInt8]? {
        guard let end = headEnd(bytes) else { return nil }
        let head = String(decoding: bytes[0..<end], as: UTF8.self).lowercased()
        guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
              let length = Int(line.dropFirst("content-length:".count).trimmingSpaces) else { return nil }
        return bytes.count >= end + 4 + length ? Array(bytes[0..<(end + 4 + length)]) : nil
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        return (0...(bytes.count - 4)).first { bytes[$0] == 0x0D && bytes[$0 + 1] == 0x0A && bytes[$0 + 2] == 0x0D && bytes[$0 + 3] == 0x0A }
    }

    private static func parse(_ response: [UInt8], whereTo: String) throws(Unreachable) -> ServerMetrics {
        guard let end = headEnd(response) else { throw Unreachable(description: "\(whereTo) sent an incomplete answer to GET /metrics") }
        let statusLine = String(decoding: response[0..<end], as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
            throw Unreachable(description: "\(whereTo) is not an HTTP server (answered \"\(statusLine.prefix(40))\")")
        }
        guard status == 200 else { throw Unreachable(description: "\(whereTo) answered GET /metrics with HTTP \(status)") }
        let metrics = ServerMetrics(parsing: String(decoding: response[(end + 4)...], as: UTF8.self))
        guard metrics.value("parley_process_resident_memory_bytes") != nil else {
            throw Unreachable(description: "\(whereTo) served /metrics without parley's series; is it a parley server?")
        }
        return metrics
    }
}

private extension Substring {
    var trimmingSpaces: Substring {
        let start = firstIndex { $0 != " " && $0 != "\t" } ?? endIndex
        let end = lastIndex { $0 != " " && $0 != "\t" }.map { index(after: $0) } ?? start
        return self[start..<Swift.max(start, end)]
    }
}

private extension String {
    func replacingPrefix(_ prefix: String, with replacement: String) -> Substring {
        hasPrefix(prefix) ? Substring(replacement + dropFirst(prefix.count)) : Substring(self)
    }
}
