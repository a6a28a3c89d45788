import JSON
import Models

/// `tools` and `tool_choice`, as `session.update` and `response.create` carry them: validated here,
/// so that a bad definition is refused with the field it is in, before any of it is used.
package enum ToolsField {
    /// As the Realtime API allows.
    package static let maxTools = 128
    package static let maxNameBytes = 64
    package static let maxDescriptionBytes = 4096
    /// A schema larger than this is not a tool's arguments but an attempt to fill memory.
    package static let maxParametersBytes = 16 * 1024

    /// nil when the field is absent; an empty set is "no tools".
    package static func tools(_ fields: EventFields, _ key: String = "tools") throws(ProtocolError) -> ToolSet? {
        guard let list = try fields.array(key) else { return nil }
        guard list.count <= maxTools else { throw fields.invalid(key, "holds \(list.count) tools; at most \(maxTools) are allowed") }
        var tools: [ToolDefinition] = []
        var names = Set<String>()
        for (index, value) in list.enumerated() {
            let place = "\(key)[\(index)]"
            guard value.object != nil else { throw fields.invalid(place, "must be an object") }
            let tool = EventFields(value, path: fields.name(place))
            let type = try tool.string("type") ?? "function"
            // MCP entries are read by `servers`.
            if type == "mcp" { continue }
            guard type == "function" else { throw tool.invalid("type", "must be 'function' or 'mcp', got '\(type)'") }
            // The beta and chat-completions shape nests the function; the Realtime API's is flat.
            let function = try tool.object("function") ?? tool
            let name = try function.requiredString("name")
            guard !name.isEmpty, name.utf8.count <= maxNameBytes,
                  name.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" }) else {
                throw function.invalid("name", "must be 1 to \(maxNameBytes) letters, digits, '_' or '-', got '\(name)'")
            }
            guard names.insert(name).inserted else { throw function.invalid("name", "'\(name)' is declared twice") }
            let description = try function.string("description")
            if let description, description.utf8.count > maxDescriptionBytes {
                throw function.invalid("description", "is longer than \(maxDescriptionBytes) bytes")
            }
            if let parameters = functionValue(value)["parameters"], !parameters.isNull {
                guard parameters.object != nil else { throw function.invalid("parameters", "must be a JSON Schema object") }
                if let type = parameters["type"], type.string != "object" {
                    throw function.invalid("parameters", "must be a schema of \"type\": \"object\" (a function's arguments are an object)")
                }
                guard parameters.description.utf8.count <= maxParametersBytes else {
                    throw function.invalid("parameters", "is larger than \(maxParametersBytes) bytes")
                }
                tools.append(ToolDefinition(name: name, description: description, parameters: parameters))
            } else {
                tools.append(ToolDefinition(name: name, description: description))
            }
        }
        return ToolSet.of(tools)
    }

    /// The `type: "mcp"` entries of `key`: nil when the field is absent, empty when it lists none
    /// (which removes the servers a session had). Labels name a server once.
    package static func servers(_ fields: EventFields, _ key: String = "tools") throws(ProtocolError) -> [MCPServerEntry]? {
        guard let list = try fields.array(key) else { return nil }
        var servers: [MCPServerEntry] = []
        for (index, value) in list.enumerated() where value["type"]?.string == "mcp" {
            let entry = try MCPServerEntry.parse(EventFields(value, path: fields.name("\(key)[\(index)]")))
            guard !servers.contains(where: { $0.label == entry.label }) else {
                throw fields.invalid("\(key)[\(index)].server_label", "'\(entry.label)' names a second MCP server; each needs its own label")
            }
            servers.append(entry)
        }
        return servers
    }

    private static func functionValue(_ tool: JSON) -> JSON {
        if let function = tool["function"], function.object != nil { return function }
        return tool
    }

    /// `"auto"`, `"none"`, `"required"`, or `{"type": "function", "name": …}` (the chat API's
    /// `{"type":"function","function":{"name":…}}` too).
    package static func choice(_ fields: EventFields, _ key: String = "tool_choice") throws(ProtocolError) -> ToolChoice? {
        if let object = try? fields.object(key) {
            let type = try object.requiredString("type")
            if type == "mcp" { return .mcp(serverLabel: try object.requiredString("server_label"), name: try object.string("name")) }
            guard type == "function" else { throw object.invalid("type", "must be 'function' or 'mcp', got '\(type)'") }
            let name = try (object.object("function") ?? object).requiredString("name")
            return .function(name)
        }
        switch try fields.choice(key, ["auto", "none", "required"]) {
        case "auto": return .auto
        case "none": return ToolChoice.none
        case "required": return .required
        default: return nil
        }
    }

    /// A named choice must name a declared tool (or MCP server); `required` needs at least one.
    package static func check(_ choice: ToolChoice, against tools: ToolSet?, servers: [MCPServerEntry] = [], param: String) throws(ProtocolError) {
        switch choice {
        case .mcp(let label, _) where !servers.contains(where: { $0.label == label }):
            throw ProtocolError(.invalidValue, "'\(param)' names the MCP server '\(label)', which is not among the tools", param: param)
        case .required where (tools?.tools.isEmpty ?? true) && !servers.isEmpty: break
        case .function(let name) where !(tools?.tools.contains { $0.name == name } ?? false):
            throw ProtocolError(.invalidValue, "'\(param)' names the function '\(name)', which is not among the session's tools", param: param)
        case .required where (tools?.tools.isEmpty ?? true):
            throw ProtocolError(.invalidValue, "'\(param)' is 'required' but no tools are declared", param: param)
        default: break
        }
    }
}
