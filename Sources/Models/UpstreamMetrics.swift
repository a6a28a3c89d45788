import Metrics

/// The upstreams' series in /metrics: how fast models answer, what Parley adds to their deltas,
/// and the faults (retries, fallbacks, stalls, open circuits).
public final class UpstreamMetrics: Sendable {
    public static let shared = UpstreamMetrics()

    public let firstToken = Histogram(name: "parley_upstream_first_token_seconds",
                               help: "From sending a request to an upstream model to its first text delta.",
                               bounds: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30])
    public let serverAdded = Histogram(name: "parley_server_added_latency_seconds",
                                help: "From an upstream delta's bytes being read to the client's frame being written: what Parley adds.")

    let retries = MetricFamily(name: "parley_upstream_retries_total", help: "Model calls tried again after a 429, a 5xx, a failed connection or a stall, before the client saw any of the reply.")
    let fallbacks = MetricFamily(name: "parley_upstream_fallbacks_total", help: "Turns moved to the fallback upstream.")
    let stalls = MetricFamily(name: "parley_upstream_stalls_total", help: "Replies cut because the upstream went quiet (--llm-stall-seconds).")
    public let apologies = MetricFamily(name: "parley_upstream_apologies_total", help: "Turns answered with the apology because every attempt failed (a 429, 5xx, failed connection or stall each time).")
    let circuitsOpen = MetricFamily(name: "parley_upstream_circuit_open", help: "1 while an upstream's circuit is open (calls skip it).", kind: .gauge,
                                    labels: ["primary", "fallback"].map { "upstream=\"\($0)\"" })

    public func render() -> String {
        var out = PrometheusText()
        firstToken.render(into: &out)
        serverAdded.render(into: &out)
        for family in [retries, fallbacks, stalls, apologies, circuitsOpen] { family.render(into: &out) }
        return out.text
    }
}
