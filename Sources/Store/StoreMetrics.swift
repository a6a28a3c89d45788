import Metrics

/// Which store a `parley_store_*` series is about.
public enum StoreKind: String, Sendable, MetricLabel {
    public static let labelName = "store"
    case sqlite, redis
}

/// How a store's writes end, as `parley_store_writes_total{result}` counts them: `ok`, and the
/// store's own failures.
public protocol StoreWriteResult: MetricLabel, CaseIterable, Equatable {
    /// The write was made (its bytes are counted).
    static var ok: Self { get }
}

/// SQLite's writes: made, or an error from SQLite.
public enum SQLiteWriteResult: String, StoreWriteResult {
    public static let labelName = "result"
    case ok, error
}

/// Redis's writes: made; `failed`, Redis answered an error or the connection dropped with it in
/// flight; `dropped`, Redis was down, so it was never sent.
public enum RedisWriteResult: String, StoreWriteResult {
    public static let labelName = "result"
    case ok, failed, dropped
}

/// A store's `parley_store_*` series, written once for both stores: every loop's writes add to
/// the same relaxed atomics, and a scrape reads them. Each series carries `store="KIND"`; the
/// results are the store's own (`Result`), and only a store whose writes hold the loop (SQLite,
/// synchronous) times them.
public final class StoreMetrics<Result: StoreWriteResult>: Sendable {
    public let store: StoreKind
    /// Where its series are declared: the store's own registry.
    public let registry: MetricsRegistry
    let writes: LabelledFamily<Result>
    let writeTime: Histogram?
    let bytesWritten: MetricFamily

    public init(store: StoreKind, timesWrites: Bool = true, registry: MetricsRegistry = MetricsRegistry()) {
        self.store = store
        self.registry = registry
        writes = LabelledFamily(name: "parley_store_writes_total", help: "Writes to the conversation store, by result.",
                                fixed: store, registry: registry)
        // From 50 µs: an embedded store's commit (a write(2) into the WAL) is tens of microseconds;
        // the top bounds are a loop held behind another process's lock (busy_timeout).
        writeTime = timesWrites ? Histogram(name: "parley_store_write_seconds",
                                            help: "Time a write to the conversation store held the loop that made it.",
                                            bounds: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5],
                                            label: store, registry: registry) : nil
        bytesWritten = MetricFamily(name: "parley_store_bytes_written_total",
                                    help: "Bytes of items, events and settings written to the conversation store.",
                                    label: store, registry: registry)
    }

    /// One write's outcome, the payload bytes it carried, and, for a store that times its writes,
    /// how long it held the loop.
    func recordWrite(_ result: Result, bytes: Int, nanoseconds: UInt64? = nil) {
        writes.add(1, result)
        if let nanoseconds { writeTime?.observe(nanoseconds: nanoseconds) }
        if result == .ok { bytesWritten.add(bytes) }
    }
}
