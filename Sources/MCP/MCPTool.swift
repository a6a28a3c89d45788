import JSON

/// A tool an MCP server offers (server/tools, "Tool"), as a session hands it to a model and lists
/// it in an `mcp_list_tools` item.
public struct MCPTool: Equatable, Sendable {
    public let name: String
    public let description: String?
    /// The arguments' JSON Schema.
    public let inputSchema: JSON
    /// Hints such as `readOnlyHint`; untrusted unless the server is (server/tools, "Tool").
    public let annotations: JSON?

    public init(name: String, description: String? = nil, inputSchema: JSON, annotations: JSON? = nil) {
        self.name = name
        self.description = description
        self.inputSchema = inputSchema
        self.annotations = annotations
    }

    /// What a tool that states no schema takes: an object of anything.
    static let emptySchema = JSON.object([("type", .string("object")), ("properties", .object([]))])

    /// The longest tool name kept: MCP sets none, but a name becomes a function name for models,
    /// and a kilobyte name is an attack, not a tool.
    static let maxNameBytes = 256

    /// One page of a `tools/list` result: its tools, and the cursor of the next page, if any.
    struct Page: Equatable {
        var tools: [MCPTool]
        var nextCursor: String?
    }

    /// Reads a `tools/list` result. A missing, null or empty `nextCursor` ends the list
    /// (server/utilities/pagination: clients treat a missing one as the end).
    static func page(_ result: JSON) -> Result<Page, MCPError> {
        guard let entries = result["tools"]?.array else { return .failure(.malformed("the tools/list result has no tools array")) }
        var tools: [MCPTool] = []
        tools.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            guard case .object = entry, let name = entry["name"]?.string, !name.isEmpty, name.utf8.count <= maxNameBytes else {
                return .failure(.malformed("tool \(index) of the list has no usable name"))
            }
            let schema: JSON
            switch entry["inputSchema"] {
            case nil, .null?: schema = emptySchema
            case let value? where value.object != nil: schema = value
            default: return .failure(.malformed("the input schema of tool \(name) is not an object"))
            }
            let annotations = entry["annotations"].flatMap { $0.object != nil ? $0 : nil }
            tools.append(MCPTool(name: name, description: entry["description"]?.string, inputSchema: schema, annotations: annotations))
        }
        let cursor = result["nextCursor"]?.string.flatMap { $0.isEmpty ? nil : $0 }
        return .success(Page(tools: tools, nextCursor: cursor))
    }

    /// The tool as an `mcp_list_tools` item lists it (`input_schema`, as the Realtime API spells it).
    public var json: JSON {
        var members: [(String, JSON)] = [("name", .string(name))]
        if let description { members.append(("description", .string(description))) }
        members.append(("input_schema", inputSchema))
        if let annotations { members.append(("annotations", annotations)) }
        return .object(members)
    }
}
