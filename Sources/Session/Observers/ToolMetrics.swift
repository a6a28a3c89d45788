import Metrics
import Models
import MCP

/// The series of the tools the server runs itself: MCP lists and calls, how long each took at the
/// server (what a call adds beyond that is the session's, measured in the benchmark), how each
/// ended, and the fillers said while tools ran. Never a server's URL or label: a label is the
/// client's text, and a URL may carry a key.
final class ToolMetrics: Sendable {
    static let shared = ToolMetrics(registry: .process)

    let registry: MetricsRegistry
    let listTime: Histogram
    let callTime: Histogram
    let lists: LabelledFamily<MCPResult>
    let calls: LabelledFamily<MCPResult>
    let fillers: MetricFamily

    init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        let bounds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
        listTime = Histogram(name: "parley_mcp_list_seconds", help: "From asking an MCP server for its tools (not from the cache) to the whole list, every page.",
                             bounds: bounds, registry: registry)
        callTime = Histogram(name: "parley_mcp_call_seconds", help: "From sending an MCP tools/call to its result (answered or failed).", bounds: bounds, registry: registry)
        lists = LabelledFamily(name: "parley_mcp_lists_total", help: "MCP tool lists asked of servers (the cache's answers are not counted), by how they ended.",
                               registry: registry)
        calls = LabelledFamily(name: "parley_mcp_calls_total", help: "MCP tool calls the server made, by how they ended.", registry: registry)
        fillers = MetricFamily(name: "parley_tool_fillers_total", help: "Fillers said because a tool (an MCP call or a client's function) ran past --tool-filler-after.",
                               registry: registry)
    }

    func listed(_ result: Result<[MCPTool], MCPError>, seconds: Double) {
        listTime.observe(seconds: seconds)
        lists.add(1, MCPResult(result))
    }

    func called(_ result: Result<MCPToolOutput, MCPError>, seconds: Double) {
        callTime.observe(seconds: seconds)
        calls.add(1, MCPResult(result))
    }

    func cancelled() { calls.add(1, .cancelled) }
}

/// How an MCP list or call ended (`result`): answered, or the Realtime API's kind of error.
enum MCPResult: String, MetricLabel, CaseIterable {
    case ok
    case toolError = "tool_execution_error"
    case protocolError = "protocol_error"
    case httpError = "http_error"
    case cancelled
    static let labelName = "result"

    init<T>(_ result: Result<T, MCPError>) {
        switch result {
        case .success: self = .ok
        case .failure(let error):
            switch error.type {
            case "tool_execution_error": self = .toolError
            case "http_error": self = .httpError
            default: self = .protocolError
            }
        }
    }
}
