import Synchronization

/// A Prometheus histogram any loop may observe into: fixed bounds, one relaxed atomic per bucket,
/// so observing is a search and an add, and scraping sums what is there.
public final class Histogram: Sendable {
    /// Seconds, from 100 µs to 1 s: what latencies inside one process span.
    public static let latencyBounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]

    public let name: String
    public let help: String
    public let bounds: [Double]
    private let buckets: [Counter]
    private let count = Counter()
    /// Microseconds, so an integer atomic can hold the sum.
    private let sumMicroseconds = Counter()

    public init(name: String, help: String, bounds: [Double] = Histogram.latencyBounds) {
        self.name = name
        self.help = help
        self.bounds = bounds
        buckets = bounds.map { _ in Counter() }
    }

    public func observe(seconds: Double) {
        if let i = bounds.firstIndex(where: { seconds <= $0 }) { buckets[i].add(1) }
        count.add(1)
        sumMicroseconds.add(Int(seconds * 1e6))
    }

    public func observe(nanoseconds: UInt64) { observe(seconds: Double(nanoseconds) / 1e9) }

    /// The exposition: cumulative buckets, +Inf, sum and count.
    public func render() -> String {
        var out = "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        var cumulative = 0
        for (i, bound) in bounds.enumerated() {
            cumulative += buckets[i].current
            out += "\(name)_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        out += "\(name)_bucket{le=\"+Inf\"} \(count.current)\n"
        out += "\(name)_sum \(Double(sumMicroseconds.current) / 1e6)\n"
        out += "\(name)_count \(count.current)\n"
        return out
    }
}

/// A counter or gauge for modules above the server, rendered with its labels.
public final class MetricFamily: Sendable {
    public let name: String
    public let help: String
    public let type: String
    private let series: [(labels: String, counter: Counter)]

    /// `labels`: each series' label text, e.g. `status="completed"`; [""] for an unlabelled metric.
    public init(name: String, help: String, type: String = "counter", labels: [String] = [""]) {
        self.name = name
        self.help = help
        self.type = type
        series = labels.map { ($0, Counter()) }
    }

    public func add(_ n: Int, labels: String = "") {
        series.first { $0.labels == labels }?.counter.add(n)
    }

    public func render() -> String {
        var out = "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        for (labels, counter) in series { out += labels.isEmpty ? "\(name) \(counter.current)\n" : "\(name){\(labels)} \(counter.current)\n" }
        return out
    }
}
