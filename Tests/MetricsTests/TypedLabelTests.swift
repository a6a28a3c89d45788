import Testing
import Metrics

/// Labelled families declare their label as a type: one series per case, in the cases' order,
/// written as `name="value"`; a case is the only thing `add` takes, so a value the family does not
/// have cannot be counted (that is a compile error, not a test) and nothing is dropped.
@Suite struct TypedLabelTests {
    enum Outcome: String, CaseIterable, MetricLabel {
        static let labelName = "result"
        case processed, rejected
        case outOfRange = "out_of_range"
    }

    enum Store: String, MetricLabel {
        static let labelName = "store"
        case sqlite
    }

    /// A value known only at scrape (a tenant's name, say).
    struct Tenant: MetricLabel {
        static let labelName = "tenant"
        let labelValue: String
    }

    @Test func aLabelledFamilyHasASeriesPerCaseInTheirOrder() {
        let registry = MetricsRegistry()
        let frames = LabelledFamily<Outcome>(name: "parley_test_frames_total", help: "Frames, by outcome.", registry: registry)
        frames.add(2, .processed)
        frames.add(1, .outOfRange)
        frames.add(-1, .outOfRange)
        #expect(registry.render() == """
            # HELP parley_test_frames_total Frames, by outcome.
            # TYPE parley_test_frames_total counter
            parley_test_frames_total{result="processed"} 2
            parley_test_frames_total{result="rejected"} 0
            parley_test_frames_total{result="out_of_range"} 0

            """)
        #expect(frames.current(.processed) == 2 && frames.current(.rejected) == 0)
    }

    @Test func aFixedLabelComesBeforeEachSeriesOwn() {
        let registry = MetricsRegistry()
        let writes = LabelledFamily<Outcome>(name: "parley_test_writes_total", help: "Writes.", kind: .gauge, fixed: Store.sqlite, registry: registry)
        writes.add(1, .rejected)
        #expect(registry.render() == """
            # HELP parley_test_writes_total Writes.
            # TYPE parley_test_writes_total gauge
            parley_test_writes_total{store="sqlite",result="processed"} 0
            parley_test_writes_total{store="sqlite",result="rejected"} 1
            parley_test_writes_total{store="sqlite",result="out_of_range"} 0

            """)
    }

    @Test func aOneSeriesFamilyIsBareOrCarriesItsOneLabel() {
        let registry = MetricsRegistry()
        let plain = MetricFamily(name: "parley_test_a_total", help: "A.", registry: registry)
        let labelled = MetricFamily(name: "parley_test_b_total", help: "B.", label: Store.sqlite, registry: registry)
        plain.add(3)
        labelled.add(4)
        #expect(plain.current == 3 && labelled.current == 4)
        #expect(registry.render() == """
            # HELP parley_test_a_total A.
            # TYPE parley_test_a_total counter
            parley_test_a_total 3
            # HELP parley_test_b_total B.
            # TYPE parley_test_b_total counter
            parley_test_b_total{store="sqlite"} 4

            """)
    }

    @Test func computedSamplesTakeOneOrTwoTypedLabelsAndEscapeTheirValues() {
        let registry = MetricsRegistry()
        _ = ComputedFamily(name: "parley_test_tenants", help: "By tenant.", kind: .gauge, registry: registry) { samples in
            samples.add(Tenant(labelValue: "acme"), 2)
            samples.add(Tenant(labelValue: "say \"hi\"\\\n"), Outcome.rejected, 1)
        }
        #expect(registry.render() == #"""
            # HELP parley_test_tenants By tenant.
            # TYPE parley_test_tenants gauge
            parley_test_tenants{tenant="acme"} 2
            parley_test_tenants{tenant="say \"hi\"\\\n",result="rejected"} 1

            """#)
    }

    @Test func aHistogramSeriesCarriesItsLabelBeforeLe() {
        let histogram = Histogram(name: "parley_test_seconds", help: "Time.", bounds: [0.1, 1], label: Store.sqlite, registry: nil)
        histogram.observe(seconds: 0.5)
        #expect(histogram.render() == """
            # HELP parley_test_seconds Time.
            # TYPE parley_test_seconds histogram
            parley_test_seconds_bucket{store="sqlite",le="0.1"} 0
            parley_test_seconds_bucket{store="sqlite",le="1.0"} 1
            parley_test_seconds_bucket{store="sqlite",le="+Inf"} 1
            parley_test_seconds_sum{store="sqlite"} 0.5
            parley_test_seconds_count{store="sqlite"} 1

            """)
    }
}
