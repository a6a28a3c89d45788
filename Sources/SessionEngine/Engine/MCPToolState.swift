import JSON
import Models
import MCP

/// A session's MCP servers as the engine knows them: each server's list of tools (being listed,
/// listed, or failed), the approvals asked and answered, and the MCP items a client may still
/// retrieve. A value with no clock, sockets or model: the engine feeds it and reads it.
///
/// One fact each: a server's tools live here and nowhere else; the names the model knows them by
/// are derived from them per response (`targets`), so a tool list that changes cannot leave a
/// stale name behind.
package struct MCPToolState: RestingState, Equatable, Sendable {
    /// A server named by the session (or by one response), keyed by its label.
    package struct Server: Equatable, Sendable {
        package var entry: MCPServerEntry
        /// The `mcp_list_tools` item its tools were listed into.
        package let itemID: String
        package var listing: Listing
        /// Named by the session's `tools` (false: by a `response.create` only).
        package var forSession: Bool
    }

    package enum Listing: Equatable, Sendable {
        case inProgress
        case listed([MCPTool])
        case failed(MCPError)
    }

    /// An `mcp_approval_request` the model's call became, until it is answered and run.
    package struct Approval: Equatable, Sendable {
        package let id: String
        package let entry: MCPServerEntry
        package let tool: String
        /// The name the model called it by (the history's call says it).
        package let modelName: String
        package let arguments: String
        /// nil until answered; the answer is given once.
        package var approved: Bool?
        /// The approved call has been run (it runs exactly once).
        package var ran = false
    }

    /// What the model calls an MCP tool by, for one response: its server and tool.
    package struct Target: Equatable, Sendable {
        package let entry: MCPServerEntry
        package let tool: MCPTool
        package var needsApproval: Bool { entry.approval.required(for: tool) }
    }

    package var servers: [Server] = []
    package var approvals: [Approval] = []
    /// The last MCP items, whole, for `conversation.item.retrieve` (the JavaScript SDK asks for the
    /// item on every `in_progress` event). Bounded: older ones are no longer retrievable.
    package var recent: [ConversationItem] = []

    package static let maxApprovals = 64
    package static let maxRecent = 64
    /// The most servers a session may hold listed, response-only ones included.
    package static let maxServers = 16
    /// A function name as providers allow it (OpenAI: `^[a-zA-Z0-9_-]{1,64}$`).
    package static let maxNameBytes = 64

    package static let resting = MCPToolState()
    package var isResting: Bool { self == Self.resting }

    // MARK: Servers

    package func server(_ label: String) -> Server? { servers.first { $0.label == label } }

    package func server(listedInto itemID: String) -> Int? { servers.firstIndex { $0.itemID == itemID } }

    /// Whether any of `entries` is still being listed: a response that offers its tools waits.
    package func isListing(_ entries: [MCPServerEntry]) -> Bool {
        entries.contains { entry in
            guard let known = server(entry.label) else { return false }
            return known.listing == .inProgress && known.entry.listsSameTools(as: entry)
        }
    }

    /// The tools `entry`'s server listed that the entry allows.
    package func tools(of entry: MCPServerEntry) -> [MCPTool] {
        guard let known = server(entry.label), known.entry.listsSameTools(as: entry), case .listed(let tools) = known.listing else { return [] }
        guard let allowed = entry.allowed else { return tools }
        return tools.filter(allowed.matches)
    }

    // MARK: The model's names

    /// The tools of `entries` as functions the model may call, with what each name stands for.
    /// A tool keeps its own name when no other tool offered (nor a client function) has it, so a
    /// model and the built-in agent read it as the server wrote it; names that collide become
    /// `label__name`, made to fit what providers allow.
    package func targets(_ entries: [MCPServerEntry], besides functions: [ToolDefinition]) -> [(name: String, target: Target)] {
        let offered = entries.flatMap { entry in tools(of: entry).map { Target(entry: entry, tool: $0) } }
        var counts: [String: Int] = [:]
        for name in functions.map(\.name) + offered.map({ Self.functionName($0.tool.name) }) { counts[name, default: 0] += 1 }
        var taken = Set(functions.map(\.name))
        var out: [(String, Target)] = []
        for target in offered {
            let own = Self.functionName(target.tool.name)
            var name = counts[own] == 1 ? own : Self.functionName(target.entry.label + "__" + target.tool.name)
            var suffix = 2
            while taken.contains(name) {
                let tail = "_\(suffix)"
                name = String(name.prefix(Self.maxNameBytes - tail.utf8.count)) + tail
                suffix += 1
            }
            taken.insert(name)
            out.append((name, target))
        }
        return out
    }

    /// `name` with what providers refuse made `_`, cut to 64 bytes.
    package static func functionName(_ name: String) -> String {
        let kept = String(String.UnicodeScalarView(name.unicodeScalars.map { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "-") ? scalar : "_"
        }))
        return kept.isEmpty ? "tool" : String(kept.prefix(maxNameBytes))
    }

    // MARK: Approvals

    package enum ApprovalAnswer: Equatable {
        case accepted(Approval)
        case unknown
        case alreadyAnswered
    }

    /// The client answered the request `id`: the answer is taken once; a second, or an answer to a
    /// request never made (or long gone), is refused.
    package mutating func answer(_ id: String, approve: Bool) -> ApprovalAnswer {
        guard let index = approvals.firstIndex(where: { $0.id == id }) else { return .unknown }
        guard approvals[index].approved == nil else { return .alreadyAnswered }
        approvals[index].approved = approve
        return .accepted(approvals[index])
    }

    package mutating func asked(_ approval: Approval) {
        if approvals.count >= Self.maxApprovals, let settled = approvals.firstIndex(where: { $0.approved != nil }) ?? approvals.indices.first {
            approvals.remove(at: settled)
        }
        approvals.append(approval)
    }

    /// The answered requests not yet acted on, in the order they were asked; each taken once.
    package mutating func takeAnswered() -> [Approval] {
        var taken: [Approval] = []
        for index in approvals.indices where approvals[index].approved != nil && !approvals[index].ran {
            approvals[index].ran = true
            taken.append(approvals[index])
        }
        // Kept (within `maxApprovals`), so that a replayed answer is told it was answered.
        return taken
    }

    package var hasAnswered: Bool { approvals.contains { $0.approved != nil && !$0.ran } }

    // MARK: Items

    package mutating func remember(_ item: ConversationItem) {
        recent.removeAll { $0.id == item.id }
        if recent.count >= Self.maxRecent { recent.removeFirst() }
        recent.append(item)
    }

    package func item(_ id: String) -> ConversationItem? {
        if let index = server(listedInto: id) {
            let server = servers[index]
            let tools: [MCPTool] = if case .listed(let all) = server.listing { all } else { [] }
            return ConversationItem(id: id, role: .assistant, status: server.listing == .inProgress ? .inProgress : .completed, content: [],
                                    mcp: .listTools(serverLabel: server.entry.label, tools: tools))
        }
        return recent.last { $0.id == id }
    }
}

package extension MCPToolState.Server {
    var label: String { entry.label }
}
