import Histogram
import JSON

/// Latencies in nanoseconds, in an HdrHistogram (hdrhistogram-swift) with three significant
/// digits: every value is kept to within 0.1 %, from 1 ns to an hour. Recording is an index
/// computation and an increment: no allocation, no sorting, whatever the message rate. Histograms
/// from several processes merge by adding counts; between processes they travel as JSON.
struct LatencyRecorder {
    /// Values are clamped here, far beyond any bounded run.
    static let highestTrackable: UInt64 = 3_600_000_000_000

    private var histogram = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: highestTrackable,
                                              numberOfSignificantValueDigits: .three)
    private(set) var sum: Double = 0
    /// Exact, unlike the histogram's own (the edges of their buckets).
    private(set) var minimum: UInt64 = .max
    private(set) var maximum: UInt64 = 0

    init() {}

    var count: UInt64 { histogram.totalCount }
    var mean: Double { count > 0 ? sum / Double(count) : 0 }

    mutating func record(_ nanoseconds: UInt64) {
        _ = histogram.record(Swift.min(Swift.max(nanoseconds, 1), Self.highestTrackable))
        sum += Double(nanoseconds)
        minimum = Swift.min(minimum, nanoseconds)
        maximum = Swift.max(maximum, nanoseconds)
    }

    mutating func merge(_ other: LatencyRecorder) {
        histogram.add(other.histogram)
        sum += other.sum
        minimum = Swift.min(minimum, other.minimum)
        maximum = Swift.max(maximum, other.maximum)
    }

    /// The value at or below which `percent` of the recordings fall (within 0.1 %), never above
    /// the largest value seen. 0 when empty.
    func percentile(_ percent: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        return Swift.min(histogram.valueAtPercentile(percent), maximum)
    }

    /// How many recordings were above `nanoseconds` (to within the histogram's 0.1 %).
    func count(above nanoseconds: UInt64) -> UInt64 {
        guard count > 0, maximum > nanoseconds else { return 0 }
        return histogram.count(within: (nanoseconds + 1)...Self.highestTrackable)
    }

    // MARK: Across processes

    /// Sparse: only the values recorded, as [value, count] pairs (each value the highest
    /// equivalent of its HdrHistogram bucket).
    var json: JSON {
        let values = histogram.recordedValues().map { JSON.array([.number(Double($0.value)), .number(Double($0.count))]) }
        return .object([
            ("count", .number(Double(count))),
            ("min", .number(Double(count > 0 ? minimum : 0))),
            ("max", .number(Double(maximum))),
            ("sum", .number(sum)),
            ("values", .array(values)),
        ])
    }

    init(json: JSON?) {
        guard let json, let values = json["values"]?.array else { return }
        for pair in values {
            guard let pair = pair.array, pair.count == 2, let value = pair[0].double, let n = pair[1].double,
                  value >= 0, n > 0, n < 1e18 else { continue }
            _ = histogram.record(Swift.min(Swift.max(UInt64(value), 1), Self.highestTrackable), count: UInt64(n))
        }
        sum = json["sum"]?.double ?? 0
        if count > 0 {
            minimum = UInt64(json["min"]?.double ?? 0)
            maximum = UInt64(json["max"]?.double ?? 0)
        }
    }

    /// "p50 1.21 ms  p99 3.40 ms  max 9.87 ms" style summaries.
    static func format(nanoseconds: UInt64) -> String {
        let v = Double(nanoseconds)
        switch v {
        case ..<1_000: return "\(nanoseconds) ns"
        case ..<1_000_000: return Format.fixed(v / 1e3, v < 1e4 ? 2 : 1) + " µs"
        case ..<1_000_000_000: return Format.fixed(v / 1e6, v < 1e7 ? 2 : 1) + " ms"
        default: return Format.fixed(v / 1e9, 2) + " s"
        }
    }
}
