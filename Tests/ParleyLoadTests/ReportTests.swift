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

    @Test func voiceRunsMakeALagChartAndATableRow() throws {
        let voice = try JSON(parsing: """
            {"command":"voice","url":"ws://127.0.0.1:1/ws","sessions":10000,"speaking":500,"opus":"wideband","opus_bitrate":24000,
             "measured_seconds":10,"frames_sent":250000,"frames_sent_in_all":400000,"frames_processed_in_all":400000,
             "server_lag_seconds_bound":{"p50":0.001,"p99":0.005,"p99_9":0.025},
             "server_cores_while_measuring":1.2,"client_cores_while_measuring":0.25,"steal_fraction_while_measuring":0.02,"passed":true}
            """)
        let report = LoadReport(title: "t", runs: [("voice-500", voice)])
        #expect(report.html.contains("lag behind real time against speakers"))
        let table = try #require(report.tables.first { $0.name == "voice" })
        #expect(table.markdown.contains("| 500 of 10,000 | wideband 24k | 25,000 | ≤ 1.00 ms | **≤ 5.00 ms** | ≤ 25.0 ms | 400,000 of 400,000 | 1.20 | 0.25 | 2 % | pass |"))
    }

    @Test func docsBlocksAreReplacedByTablesOfTheSameName() {
        let docs = """
            # Benchmarks
            <!-- report:voice -->
            old table
            <!-- /report:voice -->
            text between
            <!-- report:echo -->stale<!-- /report:echo -->
            <!-- report:codec --><!-- /report:codec -->
            """
        let tables = [LoadReport.Table(name: "voice", title: "V", markdown: "| a |\n"),
                      LoadReport.Table(name: "echo", title: "E", markdown: "| b |\n"),
                      LoadReport.Table(name: "ladder", title: "L", markdown: "| c |\n")]
        let (text, replaced) = DocsTables.update(docs, with: tables, source: "LoadTests/reports/bench-X")
        #expect(replaced == ["voice", "echo"])
        #expect(!text.contains("old table") && !text.contains("stale"))
        #expect(text.contains("<!-- report:voice -->\n_From `LoadTests/reports/bench-X` (`parley-load report`)._\n\n| a |\n\n<!-- /report:voice -->"))
        #expect(text.contains("text between") && text.contains("<!-- report:codec --><!-- /report:codec -->"))
        // Idempotent: a second pass leaves the same text.
        #expect(DocsTables.update(text, with: tables, source: "LoadTests/reports/bench-X").text == text)
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
