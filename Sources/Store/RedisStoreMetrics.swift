import Metrics

/// The Redis store's series in /metrics: every loop adds to the same relaxed atomics. One set per
/// store (a process has one); `render()` is what the server's /metrics appends.
public final class RedisStoreMetrics: Sendable {
    /// A write (one MULTI/EXEC) by how it ended: `ok`; `failed` (Redis answered an error, or the
    /// connection dropped with it in flight); `dropped` (Redis was down, so it was never sent).
    let writes = MetricFamily(name: "parley_store_writes_total", help: "Conversation store writes, by result.",
                              labels: ["ok", "failed", "dropped"].map { "store=\"redis\",result=\"\($0)\"" })
    let bytesWritten = MetricFamily(name: "parley_store_bytes_written_total", help: "Bytes of the conversation store's acknowledged writes (arguments only).",
                                    labels: ["store=\"redis\""])
    let up = MetricFamily(name: "parley_redis_up", help: "1 while every loop's Redis connection is up, 0 while any is down or none is made yet.", kind: .gauge)
    let reconnects = MetricFamily(name: "parley_redis_reconnects_total", help: "Attempts to connect to Redis again after a connection was lost or refused.")

    public init() {}

    enum WriteResult: String { case ok, failed, dropped }

    func wrote(_ result: WriteResult, bytes: Int) {
        writes.add(1, labels: "store=\"redis\",result=\"\(result.rawValue)\"")
        if result == .ok { bytesWritten.add(bytes, labels: "store=\"redis\"") }
    }

    public func render() -> String {
        var out = PrometheusText()
        writes.render(into: &out)
        bytesWritten.render(into: &out)
        up.render(into: &out)
        reconnects.render(into: &out)
        return out.text
    }
}
