import Metrics

/// The Redis store's series in /metrics: its writes (`StoreMetrics`, by `RedisWriteResult`; not
/// timed, since they do not hold the loop) and its connections.
public final class RedisStoreMetrics: Sendable {
    /// Where its series are declared: the store's own registry.
    public let registry = MetricsRegistry()
    let writes: StoreMetrics<RedisWriteResult>
    let up: MetricFamily
    let reconnects: MetricFamily

    public init() {
        writes = StoreMetrics(store: .redis, timesWrites: false, registry: registry)
        up = MetricFamily(name: "parley_redis_up", help: "1 while every loop's Redis connection is up, 0 while any is down or none is made yet.", kind: .gauge,
                          registry: registry)
        reconnects = MetricFamily(name: "parley_redis_reconnects_total", help: "Attempts to connect to Redis again after a connection was lost or refused.",
                                  registry: registry)
    }

    func wrote(_ result: RedisWriteResult, bytes: Int) {
        writes.recordWrite(result, bytes: bytes)
    }
}
