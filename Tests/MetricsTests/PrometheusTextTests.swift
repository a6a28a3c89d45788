import Testing
import Metrics

/// The one writer of the exposition format: label values escaped as the format says (text format
/// 0.0.4: backslash, double quote and line feed), and the registry's families in name order, each
/// with one HELP and TYPE however many values declare it.
@Suite struct PrometheusTextTests {
    @Test func labelValuesEscapeBackslashQuoteAndNewlineOnly() {
        #expect(PrometheusText.escape(#"a\b"#) == #"a\\b"#)
        #expect(PrometheusText.escape(#"say "hi""#) == #"say \"hi\""#)
        #expect(PrometheusText.escape("two\nlines") == #"two\nlines"#)
        #expect(PrometheusText.escape("plain_value-1.0 é") == "plain_value-1.0 é")
        #expect(PrometheusText.escape("") == "")
    }

    @Test func theRegistryWritesFamiliesByNameAndIncludedRegistriesOnce() {
        let registry = MetricsRegistry()
        let other = MetricsRegistry()
        MetricFamily(name: "parley_test_b", help: "B.", kind: .gauge, registry: registry).add(1)
        MetricFamily(name: "parley_test_a_total", help: "A.", registry: other).add(2)
        registry.include(other)
        registry.include(other)
        registry.include(registry)
        #expect(registry.render() == """
            # HELP parley_test_a_total A.
            # TYPE parley_test_a_total counter
            parley_test_a_total 2
            # HELP parley_test_b B.
            # TYPE parley_test_b gauge
            parley_test_b 1

            """)
    }

    @Test func familiesOfOneNameShareTheFirstDeclaredHelpAndType() {
        let registry = MetricsRegistry()
        _ = Histogram(name: "parley_test_seconds", help: "First.", bounds: [1], label: Part.one, registry: registry)
        _ = Histogram(name: "parley_test_seconds", help: "Second.", bounds: [1], label: Part.two, registry: registry)
        let text = registry.render()
        #expect(text.split(separator: "# HELP ").count == 1)
        #expect(text.hasPrefix("# HELP parley_test_seconds First.\n# TYPE parley_test_seconds histogram\n"))
        #expect(text.contains(#"parley_test_seconds_count{part="one"} 0"#) && text.contains(#"parley_test_seconds_count{part="two"} 0"#))
    }

    enum Part: String, MetricLabel {
        static let labelName = "part"
        case one, two
    }
}
