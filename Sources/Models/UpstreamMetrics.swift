import Metrics

/// The upstreams' series in /metrics: how fast models answer, what Parley adds to their deltas,
/// and the faults (retries, fallbacks, stalls, open circuits). Declared in
/// `MetricsRegistry.process`; a test's own instance declares them in a registry of its own.
public final class UpstreamMetrics: Sendable {
    public static let shared = UpstreamMetrics(registry: .process)

    /// Where its series are declared.
    public let registry: MetricsRegistry

    public let firstToken: Histogram
    public let serverAdded: Histogram
    let retries: MetricFamily
    let fallbacks: MetricFamily
    let stalls: MetricFamily
    public let apologies: MetricFamily
    let circuitsOpen: LabelledFamily<UpstreamRole>

    init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        firstToken = Histogram(name: "parley_upstream_first_token_seconds",
                               help: "From sending a request to an upstream model to its first text delta.",
                               bounds: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registry: registry)
        serverAdded = Histogram(name: "parley_server_added_latency_seconds",
                                help: "From an upstream delta's bytes being read to the client's frame being written: what Parley adds.", registry: registry)
        retries = MetricFamily(name: "parley_upstream_retries_total", help: "Model calls tried again after a 429, a 5xx, a failed connection or a stall, before the client saw any of the reply.",
                               registry: registry)
        fallbacks = MetricFamily(name: "parley_upstream_fallbacks_total", help: "Turns moved to the fallback upstream.", registry: registry)
        stalls = MetricFamily(name: "parley_upstream_stalls_total", help: "Replies cut because the upstream went quiet (--llm-stall-seconds).", registry: registry)
        apologies = MetricFamily(name: "parley_upstream_apologies_total", help: "Turns answered with the apology because every attempt failed (a 429, 5xx, failed connection or stall each time).",
                                 registry: registry)
        circuitsOpen = LabelledFamily(name: "parley_upstream_circuit_open", help: "1 while an upstream's circuit is open (calls skip it).", kind: .gauge,
                                      registry: registry)
    }

    /// Its series alone, as a scrape shows them.
    public func render() -> String { registry.render() }
}

/// Which of a session's upstreams: the model it asks first, or the one it falls back to.
public enum UpstreamRole: String, Sendable, CaseIterable, MetricLabel {
    public static let labelName = "upstream"
    case primary, fallback
}
