import Metrics

/// A store's `parley_store_*` series, written once for both stores: every loop's writes add to
/// the same relaxed atomics, and a scrape reads them. Each series carries `store="KIND"`; the
/// results are the store's own (SQLite's `error`; Redis's `failed` and `dropped`), and only a
/// store whose writes hold the loop (SQLite, synchronous) times them.
public final class StoreMetrics: Sendable {
    public let store: String
    /// Where its series are declared: the store's own registry.
    public let registry: MetricsRegistry
    let writes: MetricFamily
    let writeTime: Histogram?
    let bytesWritten: MetricFamily
    /// The label texts, made once: `MetricFamily.add` finds its series by them.
    private let resultLabels: [String: String]
    private let storeLabel: String

    public init(store: String, failures: [String] = ["error"], timesWrites: Bool = true, registry: MetricsRegistry = MetricsRegistry()) {
        self.store = store
        self.registry = registry
        let label = "store=\"\(store)\""
        storeLabel = label
        let results = (["ok"] + failures).map { ($0, "\(label),result=\"\($0)\"") }
        resultLabels = Dictionary(uniqueKeysWithValues: results)
        writes = MetricFamily(name: "parley_store_writes_total", help: "Writes to the conversation store, by result.",
                              labels: results.map(\.1), registry: registry)
        // From 50 µs: an embedded store's commit (a write(2) into the WAL) is tens of microseconds;
        // the top bounds are a loop held behind another process's lock (busy_timeout).
        writeTime = timesWrites ? Histogram(name: "parley_store_write_seconds",
                                            help: "Time a write to the conversation store held the loop that made it.",
                                            bounds: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5],
                                            labels: label, registry: registry) : nil
        bytesWritten = MetricFamily(name: "parley_store_bytes_written_total",
                                    help: "Bytes of items, events and settings written to the conversation store.",
                                    labels: [label], registry: registry)
    }

    /// One write's outcome (`ok` or one of the store's failures), the payload bytes it carried,
    /// and, for a store that times its writes, how long it held the loop.
    func recordWrite(_ result: String, bytes: Int, nanoseconds: UInt64? = nil) {
        if let label = resultLabels[result] { writes.add(1, labels: label) }
        if let nanoseconds { writeTime?.observe(nanoseconds: nanoseconds) }
        if result == "ok" { bytesWritten.add(bytes, labels: storeLabel) }
    }
}
