/// A counter or gauge with one series, declared once (in the registry it is given) and counted
/// with a relaxed atomic. Its series has no label, or one fixed for the family (`store="sqlite"`,
/// for a family declared by each of several values); a family with a series per label value is a
/// `LabelledFamily`.
public final class MetricFamily: Metric {
    public let name: String
    public let help: String
    public let kind: PrometheusText.Kind
    private let labels: String
    private let counter = Counter()

    public convenience init(name: String, help: String, kind: PrometheusText.Kind = .counter, registry: MetricsRegistry) {
        self.init(name: name, help: help, kind: kind, labels: "", registry: registry)
    }

    /// The one series carries `label`.
    public convenience init(name: String, help: String, kind: PrometheusText.Kind = .counter, label: some MetricLabel, registry: MetricsRegistry) {
        self.init(name: name, help: help, kind: kind, labels: label.labelText, registry: registry)
    }

    private init(name: String, help: String, kind: PrometheusText.Kind, labels: String, registry: MetricsRegistry) {
        self.name = name
        self.help = help
        self.kind = kind
        self.labels = labels
        registry.register(self)
    }

    public func add(_ n: Int) {
        counter.add(n)
    }

    /// The series' value (tests, and a gauge read back).
    public var current: Int { counter.current }

    public func writeSamples(into out: inout PrometheusText) {
        out.sample(name, labels: labels, counter.current)
    }
}
