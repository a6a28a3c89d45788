/// A counter or gauge with one series per value of its label, declared once (in the registry it
/// is given) and counted with relaxed atomics. The series are the label's cases, in their order:
/// a fixed set keeps the cardinality bounded, and a value the family does not have cannot be
/// written (`add` takes the label's type, not its text).
public final class LabelledFamily<Label: MetricLabel & CaseIterable & Equatable>: Metric {
    public let name: String
    public let help: String
    public let kind: PrometheusText.Kind
    /// The cases, kept so that `add` searches an array made once (a synthesised `allCases` may
    /// build its array at each call).
    @usableFromInline let cases: [Label]
    /// Each case's label text, made once, and its counter.
    @usableFromInline let series: [(labels: String, counter: Counter)]

    /// `fixed`: a label every series carries before its own (`store="sqlite"`), for a family
    /// declared by each of several values (a store each).
    public init(name: String, help: String, kind: PrometheusText.Kind = .counter, fixed: (any MetricLabel)? = nil, registry: MetricsRegistry) {
        self.name = name
        self.help = help
        self.kind = kind
        cases = Array(Label.allCases)
        let prefix = fixed.map { $0.labelText + "," } ?? ""
        series = cases.map { (prefix + $0.labelText, Counter()) }
        registry.register(self)
    }

    /// Inlinable, so that the search is specialised where it is called: an enumeration's cases
    /// compared as integers, not through the generic `Equatable` witness on each step.
    @inlinable
    public func add(_ n: Int, _ label: Label) {
        // Every value of `Label` is among `cases`: made from `allCases` above.
        series[cases.firstIndex(of: label)!].counter.add(n)
    }

    /// The value of one series (tests, and a gauge read back).
    @inlinable
    public func current(_ label: Label) -> Int { series[cases.firstIndex(of: label)!].counter.current }

    public func writeSamples(into out: inout PrometheusText) {
        for (labels, counter) in series { out.sample(name, labels: labels, counter.current) }
    }
}
