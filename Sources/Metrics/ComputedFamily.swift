/// A family whose samples are read at scrape time rather than counted: a value kept elsewhere
/// (a worker pool's queue, the process's memory), a sum over loops, or labels known only then
/// (tenants, worker processes). `samples` runs on the scraping thread and must only read.
public final class ComputedFamily: Metric {
    public let name: String
    public let help: String
    public let kind: PrometheusText.Kind
    private let samples: @Sendable (inout Samples) -> Void

    /// What `samples` adds to: one line per call, under this family's name.
    public struct Samples {
        fileprivate var out: PrometheusText
        fileprivate let name: String

        /// The family's one unlabelled sample.
        public mutating func add(_ value: Int) { out.sample(name, value) }
        public mutating func add(_ value: Double) { out.sample(name, value) }

        /// A sample with one label.
        public mutating func add(_ label: some MetricLabel, _ value: Int) { out.sample(name, labels: label.labelText, value) }

        /// A sample with two labels, in this order.
        public mutating func add(_ first: some MetricLabel, _ second: some MetricLabel, _ value: Int) {
            out.sample(name, labels: first.labelText + "," + second.labelText, value)
        }
    }

    public init(name: String, help: String, kind: PrometheusText.Kind, registry: MetricsRegistry,
                samples: @escaping @Sendable (inout Samples) -> Void) {
        self.name = name
        self.help = help
        self.kind = kind
        self.samples = samples
        registry.register(self)
    }

    /// A family of one unlabelled sample, read at scrape time.
    public convenience init(name: String, help: String, kind: PrometheusText.Kind, registry: MetricsRegistry, value: @escaping @Sendable () -> Int) {
        self.init(name: name, help: help, kind: kind, registry: registry) { $0.add(value()) }
    }

    public func writeSamples(into out: inout PrometheusText) {
        var collected = Samples(out: out, name: name)
        out = PrometheusText()  // `out` moves into the collector and back, not copied
        samples(&collected)
        out = collected.out
    }
}
