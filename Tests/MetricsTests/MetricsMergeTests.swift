import Testing
import Metrics

@Suite struct MetricsMergeTests {
    let a = """
        # HELP parley_connections_open Open connections by endpoint.
        # TYPE parley_connections_open gauge
        parley_connections_open{endpoint="http"} 1
        parley_connections_open{endpoint="echo"} 3
        parley_accounted_bytes 3000
        parley_process_resident_memory_bytes 21000
        parley_process_startup_resident_memory_bytes 20000
        parley_resident_bytes_per_connection 333
        parley_accounted_bytes_per_connection 1000
        parley_loop_iteration_seconds_bucket{le="0.001"} 5
        parley_loop_iteration_seconds_sum 0.25
        """
    let b = """
        # HELP parley_connections_open Open connections by endpoint.
        # TYPE parley_connections_open gauge
        parley_connections_open{endpoint="http"} 0
        parley_connections_open{endpoint="echo"} 1
        parley_accounted_bytes 1000
        parley_process_resident_memory_bytes 30000
        parley_process_startup_resident_memory_bytes 27000
        parley_resident_bytes_per_connection 3000
        parley_accounted_bytes_per_connection 1000
        parley_loop_iteration_seconds_bucket{le="0.001"} 7
        parley_loop_iteration_seconds_sum 0.5
        """

    func lines(_ text: String) -> [Substring] { text.split(separator: "\n") }

    @Test func sumsSeriesAndRecomputesThePerConnectionRatios() {
        let merged = MetricsMerge.merge([.init(worker: "0", text: a), .init(worker: "1", text: b)])
        let out = lines(merged)
        #expect(out.filter { $0 == "# TYPE parley_connections_open gauge" }.count == 1)
        #expect(out.contains("parley_connections_open{endpoint=\"echo\"} 4"))
        #expect(out.contains("parley_connections_open{endpoint=\"http\"} 1"))
        #expect(out.contains("parley_loop_iteration_seconds_bucket{le=\"0.001\"} 12"))
        #expect(out.contains("parley_loop_iteration_seconds_sum 0.75"))
        // (51,000 - 47,000) / 4 sessions, and 4,000 / 4: not the sum of the workers' ratios.
        #expect(out.contains("parley_resident_bytes_per_connection 1000"))
        #expect(out.contains("parley_accounted_bytes_per_connection 1000"))
        #expect(out.contains("parley_worker_resident_memory_bytes{worker=\"0\"} 21000"))
        #expect(out.contains("parley_worker_sessions_open{worker=\"1\"} 1"))
    }

    @Test func sourcesWithoutProcessFiguresAddSeriesButNoWorkerLines() {
        let supervisor = "parley_workers{state=\"running\"} 2\nparley_worker_restarts_total 0\n"
        let merged = MetricsMerge.merge([.init(worker: "0", text: a), .init(worker: "supervisor", text: supervisor)])
        #expect(lines(merged).contains("parley_workers{state=\"running\"} 2"))
        #expect(!merged.contains("worker=\"supervisor\""))
    }
}
