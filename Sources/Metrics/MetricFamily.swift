/// A counter or gauge with a fixed set of label values, declared once (in the registry it is
/// given) and counted with relaxed atomics.
public final class MetricFamily: Metric {
    public let name: String
    public let help: String
    public let kind: PrometheusText.Kind
    private let series: [(labels: String, counter: Counter)]

    /// `labels`: each series' label text, e.g. `status="completed"`; [""] for an unlabelled metric.
    /// A fixed list keeps the cardinality bounded.
    public init(name: String, help: String, kind: PrometheusText.Kind = .counter, labels: [String] = [""], registry: MetricsRegistry) {
        self.name = name
        self.help = help
        self.kind = kind
        series = labels.map { ($0, Counter()) }
        registry.register(self)
    }

    public func add(_ n: Int, labels: String = "") {
        series.first { $0.labels == labels }?.counter.add(n)
    }

    public func writeSamples(into out: inout PrometheusText) {
        for (labels, counter) in series { out.sample(name, labels: labels, counter.current) }
    }
}
