/// A counter or gauge with one series, declared once (in the registry it is given) and counted
/// with a relaxed atomic. Its series has no label, or one fixed for the family (`store="sqlite"`,
/// for a family declared by each of several values); a family with a series per label value is a
/// `LabelledFamily`.
public final class MetricFamily: Metric {
    public let name: String
    public let help: String
    public let kind: PrometheusText.Kind
    private let series: [(labels: String, counter: Counter)]
    /// Declared with the transitional `labels:` init: `add(_:)` then looks for the unlabelled series.
    private let byText: Bool

    public convenience init(name: String, help: String, kind: PrometheusText.Kind = .counter, registry: MetricsRegistry) {
        self.init(name: name, help: help, kind: kind, series: [""], byText: false, registry: registry)
    }

    /// The one series carries `label`.
    public convenience init(name: String, help: String, kind: PrometheusText.Kind = .counter, label: some MetricLabel, registry: MetricsRegistry) {
        self.init(name: name, help: help, kind: kind, series: [label.labelText], byText: false, registry: registry)
    }

    private init(name: String, help: String, kind: PrometheusText.Kind, series labels: [String], byText: Bool, registry: MetricsRegistry) {
        self.name = name
        self.help = help
        self.kind = kind
        series = labels.map { ($0, Counter()) }
        self.byText = byText
        registry.register(self)
    }

    public func add(_ n: Int) {
        if byText { return add(n, labels: "") }
        series[0].counter.add(n)
    }

    /// The series' value (tests, and a gauge read back).
    public var current: Int { series[0].counter.current }

    public func writeSamples(into out: inout PrometheusText) {
        for (labels, counter) in series { out.sample(name, labels: labels, counter.current) }
    }

    // MARK: Transitional: label text written by hand, for Sources/Session only

    /// TRANSITIONAL, for Sources/Session's families alone until they are declared as
    /// `LabelledFamily` (issue 36, item 4: the Session files were being restructured when the
    /// other modules' families were typed). Each series' label text is written by hand
    /// (`status="completed"`). Nothing else may use it; it goes with Session's last site.
    public convenience init(name: String, help: String, kind: PrometheusText.Kind = .counter, labels: [String], registry: MetricsRegistry) {
        self.init(name: name, help: help, kind: kind, series: labels, byText: true, registry: registry)
    }

    /// TRANSITIONAL (see the `labels:` init): adds to the series whose label text is `labels`. A
    /// text the family did not declare is a programming error: it stops a debug build (the tests)
    /// instead of vanishing; a release build drops it, as every build did before.
    public func add(_ n: Int, labels: String) {
        guard let series = series.first(where: { $0.labels == labels }) else {
            return assertionFailure("\(name) has no series {\(labels)}")
        }
        series.counter.add(n)
    }
}
