/// The server's rules for tools it runs or waits on, the same for every session of an endpoint:
/// which MCP servers a session may name, the filler said while a tool runs, and whether a reply
/// follows an MCP call on its own. One shared object, so a session holds a pointer to it, not its
/// fields (an idle session is counted in bytes).
public final class ToolSettings: Sendable {
    public let mcpAllowList: MCPAllowList
    public let filler: ToolFiller.Settings
    /// After a response whose MCP calls ran, the next response starts by itself, as a voice agent
    /// does: on a phone call (/twilio, SIP) there is no client to send `response.create`. Off on
    /// /v1/realtime, where OpenAI's service leaves that to the client.
    public let continuesAfterTools: Bool

    public init(mcpAllowList: MCPAllowList = .any, filler: ToolFiller.Settings = .init(), continuesAfterTools: Bool = false) {
        self.mcpAllowList = mcpAllowList
        self.filler = filler
        self.continuesAfterTools = continuesAfterTools
    }

    /// The same rules, continuing after tools or not.
    public func continuing(_ continues: Bool) -> ToolSettings {
        continues == continuesAfterTools ? self : ToolSettings(mcpAllowList: mcpAllowList, filler: filler, continuesAfterTools: continues)
    }

    public static let standard = ToolSettings()
}
