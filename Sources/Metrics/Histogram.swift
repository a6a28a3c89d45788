/// A Prometheus histogram any loop may observe into: fixed bounds, one relaxed atomic per bucket,
/// so observing is a search and an add, and scraping sums what is there.
public final class Histogram: Metric {
    /// Seconds, from 100 µs to 1 s: what latencies inside one process span.
    public static let latencyBounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]

    public let name: String
    public let help: String
    public var kind: PrometheusText.Kind { .histogram }
    public let bounds: [Double]
    /// Label text every sample carries besides `le` (`store="sqlite"`), empty for none.
    public let labels: String
    private let buckets: [Counter]
    private let count = Counter()
    /// Microseconds, so an integer atomic can hold the sum.
    private let sumMicroseconds = Counter()

    /// `registry`: where it is declared; nil for one part of a family that a `SummedHistogram`
    /// declares (each loop's own, so loops do not share cache lines).
    public convenience init(name: String, help: String, bounds: [Double] = Histogram.latencyBounds, registry: MetricsRegistry?) {
        self.init(name: name, help: help, bounds: bounds, labels: "", registry: registry)
    }

    /// One series of a family labelled by `label` (`store="sqlite"`): each value is a histogram of
    /// its own, declared under the same name.
    public convenience init(name: String, help: String, bounds: [Double] = Histogram.latencyBounds, label: some MetricLabel, registry: MetricsRegistry?) {
        self.init(name: name, help: help, bounds: bounds, labels: label.labelText, registry: registry)
    }

    /// The one designated init, with the label text already made by the two above.
    private init(name: String, help: String, bounds: [Double], labels: String, registry: MetricsRegistry?) {
        self.name = name
        self.help = help
        self.bounds = bounds
        self.labels = labels
        buckets = bounds.map { _ in Counter() }
        registry?.register(self)
    }

    public func observe(seconds: Double) {
        if let i = bounds.firstIndex(where: { seconds <= $0 }) { buckets[i].add(1) }
        count.add(1)
        sumMicroseconds.add(Int(seconds * 1e6))
    }

    public func observe(nanoseconds: UInt64) { observe(seconds: Double(nanoseconds) / 1e9) }

    public func writeSamples(into out: inout PrometheusText) {
        Self.writeSamples([self], into: &out)
    }

    /// Several histograms of the same name and bounds (one per loop) as one series, summed.
    static func writeSamples(_ parts: [Histogram], into out: inout PrometheusText) {
        guard let first = parts.first else { return }
        let buckets = first.bounds.indices.map { i in parts.reduce(0) { $0 + $1.buckets[i].current } }
        let sum = Double(parts.reduce(0) { $0 + $1.sumMicroseconds.current }) / 1e6
        out.histogramSamples(first.name, bounds: first.bounds, buckets: buckets, sum: sum,
                             count: parts.reduce(0) { $0 + $1.count.current }, labels: first.labels)
    }
}

/// One histogram family made of parts observed apart (one per loop) and summed at scrape: the
/// parts are declared without a registry, and this declares the family.
public final class SummedHistogram: Metric {
    private let parts: [Histogram]
    public let name: String
    public let help: String
    public var kind: PrometheusText.Kind { .histogram }

    /// `parts`: at least one, all of one name and bounds.
    public init(_ parts: [Histogram], registry: MetricsRegistry) {
        precondition(!parts.isEmpty, "a summed histogram needs a part")
        self.parts = parts
        name = parts[0].name
        help = parts[0].help
        registry.register(self)
    }

    public func writeSamples(into out: inout PrometheusText) { Histogram.writeSamples(parts, into: &out) }
}
