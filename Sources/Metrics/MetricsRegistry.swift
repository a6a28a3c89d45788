import Synchronization

/// Where metrics are declared, and what an exposition is rendered from. A metric is registered by
/// being declared (each metric type's `init` takes the registry), so a series cannot be declared
/// and then forgotten by a hand-written list; an exposition renders every family of the registry
/// and of the registries it includes, ordered by name, through the one `PrometheusText` writer.
///
/// `MetricsRegistry.process` holds the series a module counts for the whole process (its
/// singletons: sessions, speech, upstream faults, calls, tenants). A value with series of its own
/// (a server's loops, a store, the supervisor) declares them in a registry of its own, which an
/// exposition includes: two servers or two stores in one process (tests do that) keep apart.
///
/// Registering takes a lock, once per metric at start; observing never does (each metric's values
/// are relaxed atomics), and a scrape takes the lock to copy the list.
public final class MetricsRegistry: Sendable {
    /// The process's own series: what modules count for every session, call and tenant.
    public static let process = MetricsRegistry()

    private struct State {
        var metrics: [any Metric] = []
        var included: [MetricsRegistry] = []
    }
    private let state = Mutex(State())

    public init() {}

    /// Called by a metric's `init`.
    func register(_ metric: any Metric) {
        state.withLock { $0.metrics.append(metric) }
    }

    /// Renders `other`'s metrics with this registry's (once, however often it is included).
    public func include(_ other: MetricsRegistry) {
        guard other !== self else { return }
        state.withLock { state in
            if !state.included.contains(where: { $0 === other }) { state.included.append(other) }
        }
    }

    /// Every metric reachable from this registry, each registry's once.
    public var metrics: [any Metric] {
        var seen: [MetricsRegistry] = []
        var found: [any Metric] = []
        collect(into: &found, seen: &seen)
        return found
    }

    private func collect(into found: inout [any Metric], seen: inout [MetricsRegistry]) {
        guard !seen.contains(where: { $0 === self }) else { return }
        seen.append(self)
        let (metrics, included) = state.withLock { ($0.metrics, $0.included) }
        found += metrics
        for registry in included { registry.collect(into: &found, seen: &seen) }
    }

    /// The exposition: every family, by name; families declared more than once under one name
    /// (the same series of two values) share one HELP and TYPE, the first declared.
    public func render(into out: inout PrometheusText) {
        var families: [String: [any Metric]] = [:]
        for metric in metrics { families[metric.name, default: []].append(metric) }
        for name in families.keys.sorted() {
            let members = families[name]!
            out.family(name, members[0].kind, help: members[0].help)
            for metric in members { metric.writeSamples(into: &out) }
        }
    }

    public func render() -> String {
        var out = PrometheusText()
        render(into: &out)
        return out.text
    }
}
