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

        /// `labels` is the label text without braces (`reason="x"`), empty for none.
        public mutating func add(labels: String = "", _ value: Int) { out.sample(name, labels: labels, value) }
        public mutating func add(labels: String = "", _ value: Double) { out.sample(name, labels: labels, value) }
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
