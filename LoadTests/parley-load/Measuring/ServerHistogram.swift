import JSON

/// One Prometheus histogram from the server's /metrics: cumulative `_bucket{le="…"}` counts, `_sum`
/// and `_count`. Two scrapes subtract to the observations made between them, which is how `turns`
/// reads the server's side of the measured period without the start-up and warm-up in it.
struct ServerHistogram {
    /// Upper bounds in seconds, ascending, +Inf last; `cumulative[i]` observations were ≤ `bounds[i]`.
    let bounds: [Double]
    let cumulative: [Double]
    let sum: Double
    let count: Double

    /// The histogram `name` in `metrics`, or nil when the server does not export it. Series with
    /// labels besides `le` are added together, bound by bound; with `label` (`stage="synthesis"`),
    /// only the series that carry it.
    init?(_ name: String, in metrics: ServerMetrics, label: String? = nil) {
        func wanted(_ labels: String) -> Bool { label.map { labels.split(separator: ",").contains(Substring($0)) } ?? true }
        var byBound: [Double: Double] = [:]
        for (labels, value) in metrics.series(name + "_bucket") where wanted(labels) {
            guard let bound = Self.upperBound(labels) else { continue }
            byBound[bound, default: 0] += value
        }
        guard !byBound.isEmpty else { return nil }
        bounds = byBound.keys.sorted()
        cumulative = bounds.map { byBound[$0]! }
        func total(_ suffix: String) -> Double {
            if label == nil, let value = metrics.value(name + suffix) { return value }
            return metrics.series(name + suffix).filter { wanted($0.key) }.values.reduce(0, +)
        }
        sum = total("_sum")
        count = total("_count")
    }

    private init(bounds: [Double], cumulative: [Double], sum: Double, count: Double) {
        self.bounds = bounds
        self.cumulative = cumulative
        self.sum = sum
        self.count = count
    }

    /// The `le` label's value: `le="0.001"` → 0.001, `le="+Inf"` → infinity.
    private static func upperBound(_ labels: String) -> Double? {
        for label in labels.split(separator: ",") where label.hasPrefix("le=\"") && label.hasSuffix("\"") {
            let text = label.dropFirst(4).dropLast()
            return text == "+Inf" ? .infinity : Double(text)
        }
        return nil
    }

    /// What was observed after `earlier` was scraped. Nil if the bounds changed (another server
    /// answered) or a counter went backwards (the server restarted).
    func since(_ earlier: ServerHistogram) -> ServerHistogram? {
        guard earlier.bounds == bounds else { return nil }
        let counts = zip(cumulative, earlier.cumulative).map { $0 - $1 }
        guard counts.allSatisfy({ $0 >= 0 }), count >= earlier.count else { return nil }
        return ServerHistogram(bounds: bounds, cumulative: counts, sum: sum - earlier.sum, count: count - earlier.count)
    }

    /// The upper bound of the bucket that holds the `percent` percentile: the value is ≤ it (and
    /// above the bound before). Infinity when it fell past the last finite bound; nil when empty.
    func percentileBound(_ percent: Double) -> Double? {
        let total = cumulative.last ?? 0
        guard total > 0 else { return nil }
        let rank = max(1, (percent / 100 * total).rounded(.up))
        return bounds[cumulative.firstIndex { $0 >= rank } ?? bounds.count - 1]
    }

    var observations: Int { Int(count) }
    var mean: Double? { count > 0 ? sum / count : nil }

    /// "≤ 250 µs", or "> 1 s" past the last finite bound.
    func formatPercentile(_ percent: Double) -> String {
        guard let bound = percentileBound(percent) else { return "n/a" }
        if bound.isFinite { return "≤ " + Self.format(seconds: bound) }
        let lastFinite = bounds.last { $0.isFinite }
        return lastFinite.map { "> " + Self.format(seconds: $0) } ?? "n/a"
    }

    /// "p50 ≤ 250 µs   p99 ≤ 1 ms   p99.9 ≤ 2.5 ms   (12,000 observed, mean 180 µs)"
    var summaryLine: String {
        guard observations > 0 else { return "no observations in the measured period" }
        let mean = self.mean.map { ", mean " + LatencyRecorder.format(nanoseconds: UInt64(($0 * 1e9).rounded())) } ?? ""
        return "p50 \(formatPercentile(50))   p99 \(formatPercentile(99))   p99.9 \(formatPercentile(99.9))   (\(Format.grouped(observations)) observed\(mean))"
    }

    /// 0.00025 → "250 µs", 0.0025 → "2.5 ms", 1 → "1 s": bucket bounds are round numbers, so they
    /// print without trailing zeros.
    static func format(seconds: Double) -> String {
        func trimmed(_ value: Double) -> String {
            var text = Format.fixed(value, 3)
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
            return text
        }
        switch seconds {
        case ..<0.001: return trimmed(seconds * 1e6) + " µs"
        case ..<1: return trimmed(seconds * 1e3) + " ms"
        default: return trimmed(seconds) + " s"
        }
    }

    /// Percentiles as bucket bounds in seconds (null past the last finite bound or when empty).
    var json: JSON {
        func bound(_ percent: Double) -> JSON {
            guard let b = percentileBound(percent), b.isFinite else { return .null }
            return .number(b)
        }
        return .object([
            ("count", .int(observations)),
            ("sum_seconds", .number(sum)),
            ("p50_le_seconds", bound(50)),
            ("p99_le_seconds", bound(99)),
            ("p99_9_le_seconds", bound(99.9)),
            ("cumulative_buckets", .array(zip(bounds, cumulative).map { .array([$0.0.isFinite ? .number($0.0) : .string("+Inf"), .number($0.1)]) })),
        ])
    }
}
