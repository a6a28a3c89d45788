/// A Prometheus histogram any loop may observe into: fixed bounds, one relaxed atomic per bucket,
/// so observing is a search and an add, and scraping sums what is there.
public final class Histogram: Sendable {
    /// Seconds, from 100 µs to 1 s: what latencies inside one process span.
    public static let latencyBounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]

    public let name: String
    public let help: String
    public let bounds: [Double]
    /// Label text every sample carries besides `le` (`store="sqlite"`), empty for none.
    public let labels: String
    private let buckets: [Counter]
    private let count = Counter()
    /// Microseconds, so an integer atomic can hold the sum.
    private let sumMicroseconds = Counter()

    public init(name: String, help: String, bounds: [Double] = Histogram.latencyBounds, labels: String = "") {
        self.name = name
        self.help = help
        self.bounds = bounds
        self.labels = labels
        buckets = bounds.map { _ in Counter() }
    }

    public func observe(seconds: Double) {
        if let i = bounds.firstIndex(where: { seconds <= $0 }) { buckets[i].add(1) }
        count.add(1)
        sumMicroseconds.add(Int(seconds * 1e6))
    }

    public func observe(nanoseconds: UInt64) { observe(seconds: Double(nanoseconds) / 1e9) }

    /// The exposition: cumulative buckets, +Inf, sum and count.
    public func render(into out: inout PrometheusText) {
        Self.render([self], into: &out)
    }

    public func render() -> String {
        var out = PrometheusText()
        render(into: &out)
        return out.text
    }

    /// Several histograms of the same name and bounds (one per loop) as one series, summed.
    public static func render(_ parts: [Histogram], into out: inout PrometheusText) {
        guard let first = parts.first else { return }
        let buckets = first.bounds.indices.map { i in parts.reduce(0) { $0 + $1.buckets[i].current } }
        let sum = Double(parts.reduce(0) { $0 + $1.sumMicroseconds.current }) / 1e6
        out.histogram(first.name, help: first.help, bounds: first.bounds, buckets: buckets, sum: sum,
                      count: parts.reduce(0) { $0 + $1.count.current }, labels: first.labels)
    }
}
