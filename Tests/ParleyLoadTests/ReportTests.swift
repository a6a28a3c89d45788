import JSON
import Testing
@testable import parley_load

@Suite struct ReportTests {
    @Test func roundAxisTops() {
        #expect(SVGChart.niceCeiling(19_000) == 20_000)
        #expect(SVGChart.niceCeiling(2_100) == 2_500)
        #expect(SVGChart.niceCeiling(0.9) == 1)
    }

    @Test func textIsEscapedForHTML() {
        #expect(SVGChart.escape("a<b & \"c\">") == "a&lt;b &amp; &quot;c&quot;&gt;")
    }

    @Test func aReportOfHoldAndEchoRunsHasItsChartsAndRows() throws {
        let hold = try JSON(parsing: """
            {"command":"hold","url":"ws://127.0.0.1:1/echo","requested":1000,"open_after_hold":1000,
             "server_connected":{"echo_open":1000,"resident_growth_bytes_per_connection":420,"proportional_bytes_per_connection":900}}
            """)
        var recorder = LatencyRecorder()
        for n in [500_000, 800_000, 1_000_000, 2_000_000] { recorder.record(UInt64(n)) }
        let echo = JSON.object([("command", .string("echo")), ("url", .string("ws://127.0.0.1:1/echo")),
                                ("result", .object([("messages_per_second", .number(1234)), ("latency", recorder.json)])),
                                ("latency_ns", .object([("p99", .number(2_000_000))])), ("client_cores_while_measuring", .number(0.5))])
        let report = LoadReport(title: "t", runs: [("hold-1000", hold), ("echo-100", echo)])
        let html = report.html
        #expect(html.components("<svg") == 4)  // memory, latency, throughput, client CPU
        #expect(html.contains("ws: RSS growth") && html.contains("1,234 msg/s"))
        #expect(report.markdown.contains("| hold-1000 | hold | 1,000 of 1,000 held | 420 B/session resident | 900 B/session PSS |"))
    }
}

private extension String {
    func components(_ needle: String) -> Int {
        var count = 0
        var rest = Substring(self)
        while let range = rest.firstRange(of: needle) { count += 1; rest = rest[range.upperBound...] }
        return count
    }
}
