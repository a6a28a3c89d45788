/// Sums the Prometheus text of several processes into one exposition: what `/metrics` answers when
/// `parley serve --workers N` runs N processes on one port (like prometheus_client's multiprocess
/// mode, which merges per-process files at scrape time).
///
/// Every sample with the same name and labels is summed: counters, gauges of things (connections,
/// bytes) and histogram buckets, sums and counts all add up across processes. The two ratios, per
/// connection, do not; they are computed again from the sums. Each process's own resident memory and
/// sessions are kept too, labelled by worker, so that per-process and whole-server figures can both
/// be read.
public enum MetricsMerge {
    /// One process's exposition: `worker` labels its per-process series.
    public struct Source: Sendable {
        public let worker: String
        public let text: String
        public init(worker: String, text: String) {
            self.worker = worker
            self.text = text
        }
    }

    static let ratios = ["parley_resident_bytes_per_connection", "parley_accounted_bytes_per_connection"]

    public static func merge(_ sources: [Source]) -> String {
        var order: [String] = []           // series keys and comment lines, in first-seen order
        var sums: [String: Double] = [:]
        var seenComments = Set<String>()
        var processes: [ProcessFigures] = []
        for source in sources {
            var figures = ProcessFigures(worker: source.worker)
            for line in source.text.split(separator: "\n") {
                if line.hasPrefix("#") {
                    let comment = String(line)
                    if seenComments.insert(comment).inserted { order.append(comment) }
                    continue
                }
                guard let (key, value) = sample(line) else { continue }
                if sums[key] == nil { order.append(key) }
                sums[key, default: 0] += value
                figures.note(key, value)
            }
            // The supervisor's own series have no process figures.
            if figures.resident != nil { processes.append(figures) }
        }
        let sessions = processes.reduce(0) { $0 + $1.sessions }
        if sessions > 0 {
            let grown = (sums["parley_process_resident_memory_bytes"] ?? 0) - (sums["parley_process_startup_resident_memory_bytes"] ?? 0)
            sums[ratios[0]] = (max(0, grown) / sessions).rounded(.down)
            sums[ratios[1]] = ((sums["parley_accounted_bytes"] ?? 0) / sessions).rounded(.down)
        } else {
            for ratio in ratios where sums[ratio] != nil { sums[ratio] = 0 }
        }

        var out = ""
        for entry in order {
            if entry.hasPrefix("#") { out += entry + "\n" } else { out += "\(entry) \(format(sums[entry]!))\n" }
        }
        return out + perWorker(processes)
    }

    /// One process's own figures, kept as its lines go by.
    private struct ProcessFigures {
        let worker: String
        var resident: Double?
        var proportional = 0.0
        var sessions = 0.0

        init(worker: String) { self.worker = worker }

        mutating func note(_ key: String, _ value: Double) {
            if key == "parley_process_resident_memory_bytes" { resident = value }
            if key == "parley_process_proportional_memory_bytes" { proportional = value }
            if isSessionCount(key) { sessions += value }
        }
    }

    /// Open WebSocket sessions: every endpoint but plain HTTP.
    private static func isSessionCount(_ key: String) -> Bool {
        key.hasPrefix("parley_connections_open{") && !key.contains("endpoint=\"http\"")
    }

    /// Each process's resident memory, PSS and open sessions, labelled by worker.
    private static func perWorker(_ processes: [ProcessFigures]) -> String {
        var resident = "# HELP parley_worker_resident_memory_bytes Resident set size of each worker process.\n"
        resident += "# TYPE parley_worker_resident_memory_bytes gauge\n"
        var proportional = "# HELP parley_worker_proportional_memory_bytes Proportional set size (PSS) of each worker process.\n"
        proportional += "# TYPE parley_worker_proportional_memory_bytes gauge\n"
        var sessions = "# HELP parley_worker_sessions_open WebSocket sessions open in each worker process.\n"
        sessions += "# TYPE parley_worker_sessions_open gauge\n"
        for process in processes {
            let label = "{worker=\"\(process.worker)\"}"
            resident += "parley_worker_resident_memory_bytes\(label) \(format(process.resident ?? 0))\n"
            proportional += "parley_worker_proportional_memory_bytes\(label) \(format(process.proportional))\n"
            sessions += "parley_worker_sessions_open\(label) \(format(process.sessions))\n"
        }
        return resident + proportional + sessions
    }

    /// "name{labels} value" → (name{labels}, value); nil for a line that is not a sample.
    private static func sample(_ line: Substring) -> (String, Double)? {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { return nil }
        return (String(line[..<space]), value)
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
