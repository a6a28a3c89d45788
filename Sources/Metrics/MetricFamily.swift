/// A counter or gauge with a fixed set of label values, declared once and rendered with its
/// labels; for the series of modules above the server (sessions, speech).
public final class MetricFamily: Sendable {
    public let name: String
    public let help: String
    public let kind: PrometheusText.Kind
    private let series: [(labels: String, counter: Counter)]

    /// `labels`: each series' label text, e.g. `status="completed"`; [""] for an unlabelled metric.
    /// A fixed list keeps the cardinality bounded.
    public init(name: String, help: String, kind: PrometheusText.Kind = .counter, labels: [String] = [""]) {
        self.name = name
        self.help = help
        self.kind = kind
        series = labels.map { ($0, Counter()) }
    }

    public func add(_ n: Int, labels: String = "") {
        series.first { $0.labels == labels }?.counter.add(n)
    }

    public func render(into out: inout PrometheusText) {
        out.family(name, kind, help: help)
        for (labels, counter) in series { out.sample(name, labels: labels, counter.current) }
    }

    public func render() -> String {
        var out = PrometheusText()
        render(into: &out)
        return out.text
    }
}
