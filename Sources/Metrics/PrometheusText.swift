/// The one writer of the Prometheus text exposition format (0.0.4) in Parley: every series on
/// /metrics, the server's, the sessions' and the speech workers', and the supervisor's merge of its
/// workers' scrapes, is written through it, so HELP and TYPE lines, label syntax and number
/// formatting are the same everywhere. Only this module writes HELP and TYPE: a `MetricsRegistry`
/// does, for each family declared in it.
///
/// Why hand-written and not swift-metrics with swift-prometheus: docs/architecture.md ("Metrics"),
/// measured by `make metrics-compare`. In short, swift-prometheus scrapes in half the CPU (32 µs
/// against 73 µs, every 15 s), but its histograms lock a mutex on every observation (302 ns against
/// 87 ns with both loops observing), and switching would rename this module and rewrite every
/// call site for nothing the exposition needs.
public struct PrometheusText {
    public enum Kind: String, Sendable { case counter, gauge, histogram }

    public private(set) var text = ""

    public init() {}

    /// The HELP and TYPE lines that open a family.
    mutating func family(_ name: String, _ kind: Kind, help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(kind.rawValue)\n"
    }

    /// One sample; `labels` is the label text without braces (`reason="x"`), empty for none.
    mutating func sample(_ name: String, labels: String = "", _ value: Int) {
        text += labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n"
    }

    mutating func sample(_ name: String, labels: String = "", _ value: Double) {
        text += labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n"
    }

    /// A label value as the exposition format wants it: backslash, quote and newline escaped
    /// (every label value on /metrics passes through here, `MetricLabel.labelText`).
    public static func escape(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\n") }) else { return value }
        var out = ""
        for c in value {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    /// A sample already written as `name{labels}` and its value's text (the merge's, which keeps
    /// what it read).
    mutating func sample(series: String, text value: String) {
        text += "\(series) \(value)\n"
    }

    /// A histogram's samples: `buckets` are per-bucket counts (not cumulative), one per bound; the
    /// +Inf bucket is `count`. `labels`: label text every sample carries besides `le`, empty for none.
    mutating func histogramSamples(_ name: String, bounds: [Double], buckets: [Int], sum: Double, count: Int, labels: String = "") {
        let prefix = labels.isEmpty ? "" : labels + ","
        var cumulative = 0
        for (i, bound) in bounds.enumerated() {
            cumulative += buckets[i]
            sample("\(name)_bucket", labels: "\(prefix)le=\"\(bound)\"", cumulative)
        }
        sample("\(name)_bucket", labels: "\(prefix)le=\"+Inf\"", count)
        sample("\(name)_sum", labels: labels, sum)
        sample("\(name)_count", labels: labels, count)
    }
}
