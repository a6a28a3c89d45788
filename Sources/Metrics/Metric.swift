/// One family of series on /metrics: a name, its HELP text and TYPE, and the samples it has at
/// scrape time. Declaring one (`MetricFamily`, `Histogram`, `ComputedFamily`, `SummedHistogram`)
/// registers it in the `MetricsRegistry` it is given, and the registry writes its HELP and TYPE
/// lines; the metric writes only its samples.
public protocol Metric: AnyObject, Sendable {
    var name: String { get }
    var help: String { get }
    var kind: PrometheusText.Kind { get }
    /// Its samples, without the HELP and TYPE lines.
    func writeSamples(into out: inout PrometheusText)
}

extension Metric {
    /// This family alone in the exposition format (HELP, TYPE and samples), as a scrape shows it.
    public func render() -> String {
        var out = PrometheusText()
        out.family(name, kind, help: help)
        writeSamples(into: &out)
        return out.text
    }
}
