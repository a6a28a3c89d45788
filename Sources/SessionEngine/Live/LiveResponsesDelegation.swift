import JSON
import Models

/// `delegation.responses` of a Live session: the backend that handles the voice front's tasks
/// (openai SDK 3.54.0, `responses_delegation_config.py`). On Parley it is a text session of its
/// own on the same engine (`LiveBackend`): the server's configured language model with these
/// instructions, function tools (their calls answered by the application with
/// `response.item.create` and `response.create`) and MCP servers (called by the server, as a
/// Realtime session's are).
package struct LiveResponsesDelegation: Sendable, Equatable {
    /// The name the backend's responses report; the model that runs them is the server's.
    package var model: String
    package var instructions: String?
    package var maxOutputTokens: Int?
    package var tools: ToolSet?
    package var mcpServers: [MCPServerEntry] = []
    package var toolChoice: ToolChoice?
    /// The object as the client gave it, with each MCP server's secrets written `[redacted]`
    /// (`MCPServerEntry.json`): echoed in the session resource and kept in a stored session, so
    /// neither an event nor the store holds a credential.
    package var json: JSON

    /// The backend's instructions when the delegation gives none.
    package static let defaultInstructions = "You handle tasks a voice assistant delegates to you. Use your tools when they help, then answer with the result in one or two short sentences the assistant can say aloud."

    /// Tool types of the Responses API that Parley's backend has no counterpart for.
    static let hostedTools: Set<String> = ["web_search", "file_search", "code_interpreter", "shell", "image_generation", "custom", "namespace",
                                           "tool_search", "programmatic_tool_calling", "computer", "apply_patch"]

    package static func parse(_ fields: EventFields, update: Bool = false) throws(ProtocolError) -> LiveResponsesDelegation {
        try fields.refuseUnknown(["model", "instructions", "max_output_tokens", "parallel_tool_calls", "reasoning", "service_tier", "text", "tool_choice", "tools"])
        var delegation = LiveResponsesDelegation(model: update ? (try fields.string("model") ?? "") : try fields.requiredString("model"), json: .object([]))
        if let instructions = try fields.string("instructions") {
            guard instructions.utf8.count <= SessionConfiguration.maxInstructionBytes else {
                throw fields.invalid("instructions", "is longer than \(SessionConfiguration.maxInstructionBytes) bytes")
            }
            delegation.instructions = instructions
        }
        delegation.maxOutputTokens = try fields.integer("max_output_tokens", in: 1...1_000_000)
        _ = try fields.bool("parallel_tool_calls")
        // `reasoning`, `service_tier` and `text` tune OpenAI's models; Parley's has none of them
        // (docs/protocol.md, "GPT-Live"): checked as objects and strings, then not used.
        _ = try fields.object("reasoning")
        _ = try fields.string("service_tier")
        _ = try fields.object("text")
        if let list = try fields.array("tools") {
            for (index, tool) in list.enumerated() {
                if let type = tool["type"]?.string, hostedTools.contains(type) {
                    throw ProtocolError(.unsupportedValue, "the '\(type)' tool is OpenAI's hosted tool, which Parley's backend does not have: use function tools or MCP servers",
                                        param: fields.name("tools[\(index)].type"))
                }
            }
            delegation.tools = try ToolsField.tools(fields)
            delegation.mcpServers = try ToolsField.servers(fields) ?? []
        }
        if let choice = try? fields.object("tool_choice"), try choice.string("type") == "allowed_tools" {
            throw ProtocolError(.unsupportedValue, "'allowed_tools' is not supported by Parley's backend: name one tool, or 'auto', 'none' or 'required'",
                                param: fields.name("tool_choice"))
        }
        delegation.toolChoice = try ToolsField.choice(fields)
        delegation.json = redacted(fields.members, servers: delegation.mcpServers)
        return delegation
    }

    /// `given` with its MCP entries (in order, `servers` parsed from them) as `session.updated`
    /// shows them: secrets redacted.
    private static func redacted(_ given: JSON, servers: [MCPServerEntry]) -> JSON {
        guard case .object(var members) = given, let index = members.firstIndex(where: { $0.0 == "tools" }), let list = members[index].1.array else { return given }
        var next = servers.makeIterator()
        members[index].1 = .array(list.map { $0["type"]?.string == "mcp" ? (next.next()?.json ?? $0) : $0 })
        return .object(members)
    }

    /// Whether an MCP server of this backend sends credentials (in a stored session read back,
    /// they are `[redacted]`: they must be given again before the backend is used).
    package var hasMCPCredentials: Bool { mcpServers.contains(where: \.hasCredentials) }

    /// This backend as an update that gave `given` changes it: the fields given replace their
    /// own, the others stay ("Omitted settings keep their existing values").
    package func updated(by given: LiveResponsesDelegation) -> LiveResponsesDelegation {
        var merged = self
        let keys = Set(given.json.object?.map(\.0) ?? [])
        if keys.contains("model") { merged.model = given.model }
        if keys.contains("instructions") { merged.instructions = given.instructions }
        if keys.contains("max_output_tokens") { merged.maxOutputTokens = given.maxOutputTokens }
        if keys.contains("tools") { (merged.tools, merged.mcpServers) = (given.tools, given.mcpServers) }
        if keys.contains("tool_choice") { merged.toolChoice = given.toolChoice }
        var members = json.object ?? []
        for (key, value) in given.json.object ?? [] {
            if let index = members.firstIndex(where: { $0.0 == key }) { members[index].1 = value } else { members.append((key, value)) }
        }
        merged.json = .object(members)
        return merged
    }

    /// The backend session's settings: text out, no turns of its own (it answers when asked).
    package var engineUpdate: SessionUpdate {
        var update = SessionUpdate(instructions: instructions ?? Self.defaultInstructions, outputModalities: .text, turnDetection: .manual,
                                   maxOutputTokens: maxOutputTokens.map { .limited($0) })
        update.tools = tools ?? ToolSet.of([])
        update.mcpServers = mcpServers
        update.toolChoice = toolChoice ?? .auto
        return update
    }
}
