import JSON

/// A log-linear latency histogram in nanoseconds, in the manner of HdrHistogram: values below 256
/// are counted exactly; above, each power of two is split into 128 buckets, so a bucket is never
/// wider than 1/128 (0.8 %) of the values in it. Recording is an index computation and an
/// increment: no allocation, no sorting, whatever the message rate. Histograms from several
/// processes merge by adding counts.
struct LatencyRecorder {
    private static let exactBits = 8
    private static let halfSub = 1 << (exactBits - 1)
    /// Values are clamped here (about 73 minutes), far beyond any bounded run.
    static let highestTrackable: UInt64 = 1 << 42
    private static let bucketCount = index(of: highestTrackable) + 1

    private var counts: [UInt64]
    private(set) var count: UInt64 = 0
    private(set) var minimum: UInt64 = .max
    private(set) var maximum: UInt64 = 0
    private(set) var sum: Double = 0

    init() {
        counts = [UInt64](repeating: 0, count: Self.bucketCount)
    }

    @inline(__always)
    static func index(of value: UInt64) -> Int {
        let v = Swift.min(value, highestTrackable)
        if v < UInt64(1 << exactBits) { return Int(v) }
        let shift = (63 - v.leadingZeroBitCount) - (exactBits - 1)
        return halfSub * shift + Int(v >> UInt64(shift))
    }

    /// The smallest and largest value that land in bucket `index`.
    static func range(of index: Int) -> ClosedRange<UInt64> {
        if index < 1 << exactBits { return UInt64(index)...UInt64(index) }
        let shift = index / halfSub - 1
        let mantissa = UInt64(index - halfSub * shift)
        return (mantissa << UInt64(shift))...(((mantissa + 1) << UInt64(shift)) - 1)
    }

    mutating func record(_ nanoseconds: UInt64) {
        counts[Self.index(of: nanoseconds)] += 1
        count += 1
        minimum = Swift.min(minimum, nanoseconds)
        maximum = Swift.max(maximum, nanoseconds)
        sum += Double(nanoseconds)
    }

    mutating func merge(_ other: LatencyRecorder) {
        for i in counts.indices where other.counts[i] > 0 { counts[i] += other.counts[i] }
        count += other.count
        minimum = Swift.min(minimum, other.minimum)
        maximum = Swift.max(maximum, other.maximum)
        sum += other.sum
    }

    /// The value at or below which `percent` of the recordings fall: the top of its bucket (so it
    /// over-states by at most 0.8 %), never above the largest value seen. 0 when empty.
    func percentile(_ percent: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        let rank = Swift.max(1, UInt64((percent / 100 * Double(count)).rounded(.up)))
        var seen: UInt64 = 0
        for (i, n) in counts.enumerated() where n > 0 {
            seen += n
            if seen >= rank { return Swift.min(Self.range(of: i).upperBound, maximum) }
        }
        return maximum
    }

    var mean: Double { count > 0 ? sum / Double(count) : 0 }

    // MARK: Across processes

    /// Sparse: only the buckets that hold something, as [index, count] pairs.
    var json: JSON {
        let buckets = counts.enumerated().filter { $0.element > 0 }.map { JSON.array([.int($0.offset), .number(Double($0.element))]) }
        return .object([
            ("count", .number(Double(count))),
            ("min", .number(Double(count > 0 ? minimum : 0))),
            ("max", .number(Double(maximum))),
            ("sum", .number(sum)),
            ("buckets", .array(buckets)),
        ])
    }

    init(json: JSON?) {
        self.init()
        guard let json, let buckets = json["buckets"]?.array else { return }
        for pair in buckets {
            guard let pair = pair.array, pair.count == 2, let i = pair[0].int, let n = pair[1].double,
                  counts.indices.contains(i), n >= 0 else { continue }
            counts[i] += UInt64(n)
            count += UInt64(n)
        }
        if count > 0 {
            minimum = UInt64(json["min"]?.double ?? 0)
            maximum = UInt64(json["max"]?.double ?? 0)
        }
        sum = json["sum"]?.double ?? 0
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
