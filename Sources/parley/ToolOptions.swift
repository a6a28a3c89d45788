import ArgumentParser
import Loop
import Models
import Session
import MCP
import SessionEngine

/// The tools the server runs for sessions (MCP) and the filler said while any tool runs.
struct ToolOptions: ParsableArguments {
    enum Settings {
        static let allow = Setting<[String]?>("--mcp-allow", "PARLEY_MCP_ALLOW", default: nil,
                                              shown: "any on a loopback-only server, none otherwise", valueName: "prefixes",
                                              about: "The MCP server URLs sessions may name, as comma-separated prefixes (https://tools.example.com,http://10.0.0.5:8000/mcp); '*' allows any") { text throws(SettingRejection) in
            let prefixes = text.split(separator: ",").map { String($0.trimmingSpaces()) }.filter { !$0.isEmpty }
            for prefix in prefixes where prefix != "*" {
                guard prefix.hasPrefix("http://") || prefix.hasPrefix("https://") else { throw SettingRejection("holds '\(prefix)', which is not an http:// or https:// URL prefix") }
            }
            return prefixes
        }
        static let listTimeout = Setting.number("--mcp-list-timeout", "PARLEY_MCP_LIST_TIMEOUT", default: MCPClient.Settings().listTimeout, in: Above(lower: 0, upper: 600),
                                                about: "Seconds an MCP server has to list its tools (connecting and every page included)")
        static let callTimeout = Setting.number("--mcp-call-timeout", "PARLEY_MCP_CALL_TIMEOUT", default: MCPClient.Settings().callTimeout, in: Above(lower: 0, upper: 3600),
                                                about: "Seconds an MCP tool call may run before it fails as timed out (the server is told to cancel)")
        static let connectTimeout = Setting.number("--mcp-connect-timeout", "PARLEY_MCP_CONNECT_TIMEOUT", default: MCPClient.Settings().connectTimeout, in: Above(lower: 0, upper: 120),
                                                   about: "Seconds to connect to an MCP server")
        static let filler = Setting.text("--tool-filler", "PARLEY_TOOL_FILLER", default: ToolFiller.Settings().phrase,
                                         about: "What a spoken session says when a tool runs long (empty: nothing)")
        static let fillerAfter = Setting.number("--tool-filler-after", "PARLEY_TOOL_FILLER_AFTER", default: Double(ToolFiller.Settings().afterMs) / 1000, in: Above(lower: 0, upper: 60),
                                                about: "Seconds a tool (an MCP call or a client's function) runs before the filler is said")
    }

    @Option(Settings.allow) var allow: String?
    @Option(Settings.listTimeout) var listTimeout: String?
    @Option(Settings.callTimeout) var callTimeout: String?
    @Option(Settings.connectTimeout) var connectTimeout: String?
    @Option(Settings.filler) var filler: String?
    @Option(Settings.fillerAfter) var fillerAfter: String?

    /// `host`: the address the server listens on; a server only loopback can reach allows any MCP
    /// server by default, since its clients are this machine's.
    func settings(host: String) throws -> (ToolSettings, MCPClient.Settings) {
        let allowList: MCPAllowList
        switch try Settings.allow.read(allow) {
        case nil: allowList = AccessOptions.isLoopback(host) ? .any : .none
        case let prefixes? where prefixes.contains("*"): allowList = .any
        case let prefixes?: allowList = MCPAllowList(prefixes: prefixes)
        }
        var client = MCPClient.Settings()
        client.listTimeout = try Settings.listTimeout.read(listTimeout)
        client.callTimeout = try Settings.callTimeout.read(callTimeout)
        client.connectTimeout = try Settings.connectTimeout.read(connectTimeout)
        let filler = ToolFiller.Settings(phrase: String(try Settings.filler.read(self.filler)[...].trimmingSpaces()),
                                         afterMs: Int((try Settings.fillerAfter.read(fillerAfter) * 1000).rounded()))
        return (ToolSettings(mcpAllowList: allowList, filler: filler), client)
    }
}
