/// Sums the Prometheus text of several processes into one exposition: what `/metrics` answers when
/// `parley serve --workers N` runs N processes on one port (like prometheus_client's multiprocess
/// mode, which merges per-process files at scrape time).
///
/// Every sample with the same name and labels is summed: counters, gauges of things (connections,
/// bytes) and histogram buckets, sums and counts all add up across processes. The two ratios, per
/// connection, do not; they are computed again from the sums. Each process's own resident memory and
/// sessions are kept too, labelled by worker (`parley_worker_*`),
/// so that per-process and whole-server figures can both be read. What comes out is written by
/// `PrometheusText`, families by name, as a single process's exposition is.
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

    /// A family as the sources declared it, and its series in first-seen order.
    private struct Family {
        var help: String?
        var kind: PrometheusText.Kind?
        var series: [String] = []
    }

    public static func merge(_ sources: [Source]) -> String {
        var families: [String: Family] = [:]
        var sums: [String: Double] = [:]
        var processes: [ProcessFigures] = []
        for source in sources {
            var figures = ProcessFigures(worker: source.worker)
            var current: String?  // the family whose HELP or TYPE came last
            for line in source.text.split(separator: "\n") {
                if line.hasPrefix("#") {
                    current = comment(line, into: &families)
                    continue
                }
                guard let (key, value) = sample(line) else { continue }
                if sums[key] == nil {
                    families[family(of: key, current: current), default: Family()].series.append(key)
                }
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
            // As one process computes it: what calls (ended ones kept included), stream connections and parked sessions hold
            // is not a WebSocket session's.
            let apart = ["sip", "webrtc", "stream", "parked", "ended_calls"].reduce(0.0) { $0 + (sums["parley_accounted_bytes_by_carrier{carrier=\"\($1)\"}"] ?? 0) }
            sums[ratios[1]] = (max(0, (sums["parley_accounted_bytes"] ?? 0) - apart) / sessions).rounded(.down)
        } else {
            for ratio in ratios where sums[ratio] != nil { sums[ratio] = 0 }
        }

        perWorker(processes, into: &families, sums: &sums)

        var out = PrometheusText()
        for name in families.keys.sorted() {
            let family = families[name]!
            if let kind = family.kind { out.family(name, kind, help: family.help ?? "") }
            for key in family.series { out.sample(series: key, text: format(sums[key]!)) }
        }
        return out.text
    }

    /// Notes a HELP or TYPE line's family and what it says; the family's name.
    private static func comment(_ line: Substring, into families: inout [String: Family]) -> String? {
        let words = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
        guard words.count >= 3, words[0] == "#" else { return nil }
        let name = String(words[2])
        let rest = words.count > 3 ? String(words[3]) : ""
        var family = families[name] ?? Family()
        switch words[1] {
        case "HELP": family.help = family.help ?? rest
        case "TYPE": family.kind = family.kind ?? PrometheusText.Kind(rawValue: rest)
        default: return nil
        }
        families[name] = family
        return name
    }

    /// The family a series belongs to: the one being declared when its name starts with it (a
    /// histogram's `_bucket`, `_sum` and `_count`), else its own name.
    private static func family(of key: String, current: String?) -> String {
        let name = String(key.prefix { $0 != "{" })
        if let current, name == current || name.hasPrefix(current + "_") { return current }
        return name
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

    /// Each process's resident memory, PSS and open sessions, labelled by worker: three gauge
    /// families beside the sums.
    private static func perWorker(_ processes: [ProcessFigures], into families: inout [String: Family], sums: inout [String: Double]) {
        func byWorker(_ name: String, _ help: String, _ value: (ProcessFigures) -> Double) {
            var family = Family(help: help, kind: .gauge)
            for process in processes {
                let key = "\(name){worker=\"\(process.worker)\"}"
                family.series.append(key)
                sums[key] = value(process)
            }
            families[name] = family
        }
        byWorker("parley_worker_resident_memory_bytes", "Resident set size of each worker process.") { $0.resident ?? 0 }
        byWorker("parley_worker_proportional_memory_bytes", "Proportional set size (PSS) of each worker process.") { $0.proportional }
        byWorker("parley_worker_sessions_open", "WebSocket sessions open in each worker process.") { $0.sessions }
    }

    /// "name{labels} value" → (name{labels}, value); nil for a line that is not a sample.
    private static func sample(_ line: Substring) -> (String, Double)? {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { return nil }
        return (String(line[..<space]), value)
    }

    /// A sum as the merged exposition writes it: whole numbers without a fraction.
    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
