import Server
import Testing
import Metrics
@testable import parley_load

/// The server's Histogram exposition, read back by the harness's parser.
@Suite struct ServerHistogramTests {
    func scrape(_ histogram: Histogram) -> ServerMetrics { ServerMetrics(parsing: histogram.render()) }

    @Test func percentilesFallInTheRightBuckets() throws {
        let histogram = Histogram(name: "t_seconds", help: "test", registry: nil)
        for _ in 0..<980 { histogram.observe(seconds: 0.00008) }   // ≤ 100 µs
        for _ in 0..<15 { histogram.observe(seconds: 0.0004) }     // ≤ 500 µs
        for _ in 0..<5 { histogram.observe(seconds: 0.003) }       // ≤ 5 ms
        let parsed = try #require(ServerHistogram("t_seconds", in: scrape(histogram)))
        #expect(parsed.count == 1000)
        #expect(parsed.percentileBound(50) == 0.0001)
        #expect(parsed.percentileBound(99) == 0.0005)
        #expect(parsed.percentileBound(99.9) == 0.005)
        #expect(parsed.formatPercentile(99) == "≤ 500 µs")
    }

    @Test func twoScrapesSubtractToWhatHappenedBetween() throws {
        let histogram = Histogram(name: "t_seconds", help: "test", registry: nil)
        for _ in 0..<100 { histogram.observe(seconds: 0.5) }
        let before = try #require(ServerHistogram("t_seconds", in: scrape(histogram)))
        for _ in 0..<10 { histogram.observe(seconds: 0.0002) }
        let after = try #require(ServerHistogram("t_seconds", in: scrape(histogram)))
        let between = try #require(after.since(before))
        #expect(between.count == 10)
        #expect(between.percentileBound(99) == 0.00025)
    }

    @Test func observationsPastTheLastBoundReadAsAboveIt() throws {
        let histogram = Histogram(name: "t_seconds", help: "test", registry: nil)
        histogram.observe(seconds: 5)
        let parsed = try #require(ServerHistogram("t_seconds", in: scrape(histogram)))
        #expect(parsed.formatPercentile(50) == "> 1 s")
        #expect(ServerHistogram("absent_seconds", in: scrape(histogram)) == nil)
    }
}
