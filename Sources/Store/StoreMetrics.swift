import Metrics

/// A store's series in /metrics, process-wide: every loop's writes add to the same relaxed
/// atomics, and a scrape reads them. Each series carries `store="KIND"`, so the SQLite and Redis
/// stores' series are told apart (one process opens one store).
public final class StoreMetrics: Sendable {
    public let store: String
    let writes: MetricFamily
    let writeTime: Histogram
    let bytesWritten: MetricFamily
    /// The label texts, made once: `MetricFamily.add` finds its series by them.
    private let okLabels, errorLabels, storeLabel: String

    public init(store: String) {
        self.store = store
        let label = "store=\"\(store)\""
        storeLabel = label
        okLabels = "\(label),result=\"ok\""
        errorLabels = "\(label),result=\"error\""
        writes = MetricFamily(name: "parley_store_writes_total", help: "Writes to the conversation store, by result.",
                              labels: [okLabels, errorLabels])
        // From 50 µs: an embedded store's commit (a write(2) into the WAL) is tens of microseconds;
        // the top bounds are a loop held behind another process's lock (busy_timeout).
        writeTime = Histogram(name: "parley_store_write_seconds",
                              help: "Time a write to the conversation store held the loop that made it.",
                              bounds: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5],
                              labels: label)
        bytesWritten = MetricFamily(name: "parley_store_bytes_written_total",
                                    help: "Bytes of items, events and settings written to the conversation store.",
                                    labels: [label])
    }

    /// One write's outcome: how long it took and how many payload bytes it carried.
    func recordWrite(ok: Bool, nanoseconds: UInt64, bytes: Int) {
        writes.add(1, labels: ok ? okLabels : errorLabels)
        writeTime.observe(nanoseconds: nanoseconds)
        if ok { bytesWritten.add(bytes, labels: storeLabel) }
    }

    /// The store's families in the Prometheus text format, for /metrics.
    public func render() -> String {
        var out = PrometheusText()
        writes.render(into: &out)
        writeTime.render(into: &out)
        bytesWritten.render(into: &out)
        return out.text
    }
}
