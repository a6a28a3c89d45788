import JSON
import Models
import MCP

/// A session's MCP tool entry (`{"type": "mcp", …}` in `session.tools` or `response.tools`): which
/// server to reach and with what, which of its tools the model may call, and which calls wait for
/// the client's approval. Parsed and checked once here; the server is reached by the driver
/// (`MCPClient`), the tools it lists join the model's (`MCPToolState`).
///
/// The entry holds its secrets (`authorization`, the header values) inside `endpoint`, which never
/// prints them; `json` is the entry as `session.updated` echoes it, with each secret written
/// `[redacted]`, so neither an event, a trace of events, nor a report can carry one.
public struct MCPServerEntry: Sendable, Equatable {
    public let label: String
    /// As the client gave it (a URL's query may carry a key: `endpoint.description` is what logs show).
    public let url: String
    public let endpoint: MCPEndpoint
    /// What the tool list is cached under: the server and a keyed hash of its credentials.
    public let key: MCPToolCache.Key
    public let allowed: ToolFilter?
    public let approval: Approval
    public let description: String?
    /// The header names given (their values are secrets, and stay in `endpoint`).
    package let headerNames: [String]
    package let hasAuthorization: Bool
    /// It sends an authorization or headers of its own.
    package var hasCredentials: Bool { hasAuthorization || !headerNames.isEmpty }

    /// `allowed_tools`, or one side of a `require_approval` object: names, and whether tools the
    /// server marks read-only (`annotations.readOnlyHint`) match.
    public struct ToolFilter: Sendable, Equatable {
        public var names: [String]?
        public var readOnly: Bool?

        public func matches(_ tool: MCPTool) -> Bool {
            if let names, names.contains(tool.name) { return true }
            if readOnly == true, tool.annotations?["readOnlyHint"]?.bool == true { return true }
            return false
        }

        package var json: JSON {
            var members: [(String, JSON)] = []
            if let names { members.append(("tool_names", .array(names.map(JSON.string)))) }
            if let readOnly { members.append(("read_only", .bool(readOnly))) }
            return .object(members)
        }
    }

    /// `require_approval`. An entry that omits it asks for approval of every call, as OpenAI's
    /// documentation states: a tool that acts on the caller's behalf runs only when allowed.
    public enum Approval: Sendable, Equatable {
        case always, never
        /// Tools matching `never` run without asking, those matching `always` ask; a tool matching
        /// neither asks too (the cautious reading of an object that does not name it).
        case filtered(always: ToolFilter?, never: ToolFilter?)

        public func required(for tool: MCPTool) -> Bool {
            switch self {
            case .always: true
            case .never: false
            case .filtered(let always, let never):
                if always?.matches(tool) == true { true } else { !(never?.matches(tool) ?? false) }
            }
        }

        package var json: JSON {
            switch self {
            case .always: .string("always")
            case .never: .string("never")
            case .filtered(let always, let never):
                .object((always.map { [("always", $0.json)] } ?? []) + (never.map { [("never", $0.json)] } ?? []))
            }
        }
    }

    package static let maxLabelBytes = 64
    package static let maxDescriptionBytes = 4096
    package static let maxURLBytes = 2048
    package static let maxHeaders = 32

    public static func == (a: MCPServerEntry, b: MCPServerEntry) -> Bool {
        a.label == b.label && a.url == b.url && a.key == b.key && a.allowed == b.allowed && a.approval == b.approval && a.description == b.description
            && a.headerNames == b.headerNames && a.hasAuthorization == b.hasAuthorization
    }

    /// Whether `other` reaches the same server with the same credentials and tool filter: an entry
    /// given again unchanged (or with another approval rule or description) is not listed again.
    package func listsSameTools(as other: MCPServerEntry) -> Bool {
        label == other.label && key == other.key && allowed == other.allowed
    }

    /// The entry as `session.updated` shows it: secrets redacted, everything else as given.
    public var json: JSON {
        var members: [(String, JSON)] = [("type", .string("mcp")), ("server_label", .string(label)), ("server_url", .string(url))]
        if hasAuthorization { members.append(("authorization", .string("[redacted]"))) }
        if !headerNames.isEmpty { members.append(("headers", .object(headerNames.map { ($0, .string("[redacted]")) }))) }
        if let allowed {
            members.append(("allowed_tools", allowed.readOnly == nil ? .array((allowed.names ?? []).map(JSON.string)) : allowed.json))
        }
        members.append(("require_approval", approval.json))
        if let description { members.append(("server_description", .string(description))) }
        return .object(members)
    }

    /// Reads one entry; `tool` is the entry's object, named by its path in errors.
    package static func parse(_ tool: EventFields) throws(ProtocolError) -> MCPServerEntry {
        for hosted in ["connector_id", "tunnel_id"] where tool.has(hosted) && !tool.isNull(hosted) {
            throw tool.invalid(hosted, "names one of OpenAI's hosted connectors, which Parley does not have: give the MCP server's own 'server_url'")
        }
        let label = try tool.requiredString("server_label")
        guard !label.isEmpty, label.utf8.count <= maxLabelBytes,
              label.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" }) else {
            throw tool.invalid("server_label", "must be 1 to \(maxLabelBytes) letters, digits, '_' or '-'")
        }
        let url = try tool.requiredString("server_url")
        guard url.utf8.count <= maxURLBytes else { throw tool.invalid("server_url", "is longer than \(maxURLBytes) bytes") }
        var headers: [(String, String)] = []
        if let given = try tool.object("headers") {
            let members = given.members.object ?? []
            guard members.count <= maxHeaders else { throw tool.invalid("headers", "has \(members.count) headers; at most \(maxHeaders) are allowed") }
            for (name, value) in members {
                guard let value = value.string else { throw given.invalid(name, "must be a string") }
                headers.append((name, value))
            }
        }
        let authorization = try tool.string("authorization")
        let endpoint: MCPEndpoint
        do {
            endpoint = try MCPEndpoint(url: url, authorization: authorization, headers: headers)
        } catch {
            // The reason names a header by name only, never a value.
            let field = switch error {
            case .url: "server_url"
            case .authorization: "authorization"
            default: "headers"
            }
            throw tool.invalid(field, "is not usable: \(error)")
        }
        let description = try tool.string("server_description")
        if let description, description.utf8.count > maxDescriptionBytes {
            throw tool.invalid("server_description", "is longer than \(maxDescriptionBytes) bytes")
        }
        return MCPServerEntry(label: label, url: url, endpoint: endpoint, key: MCPToolCache.Key(endpoint),
                              allowed: try allowedTools(tool), approval: try approval(tool), description: description,
                              headerNames: headers.map(\.0), hasAuthorization: authorization != nil)
    }

    private static func allowedTools(_ tool: EventFields) throws(ProtocolError) -> ToolFilter? {
        if let list = try? tool.array("allowed_tools") {
            return ToolFilter(names: try names(list, tool, "allowed_tools"))
        }
        guard let object = try tool.object("allowed_tools") else { return nil }
        return try filter(object)
    }

    private static func approval(_ tool: EventFields) throws(ProtocolError) -> Approval {
        if tool.members["require_approval"]?.object != nil, let object = try tool.object("require_approval") {
            return .filtered(always: try object.object("always").map(filter), never: try object.object("never").map(filter))
        }
        switch try tool.choice("require_approval", ["always", "never"]) {
        case "never": return .never
        default: return .always
        }
    }

    private static func filter(_ object: EventFields) throws(ProtocolError) -> ToolFilter {
        let list = try object.array("tool_names")
        return ToolFilter(names: try list.map { list throws(ProtocolError) in try names(list, object, "tool_names") }, readOnly: try object.bool("read_only"))
    }

    private static func names(_ list: [JSON], _ fields: EventFields, _ key: String) throws(ProtocolError) -> [String] {
        guard list.count <= 1000 else { throw fields.invalid(key, "names more than 1000 tools") }
        var names: [String] = []
        for value in list {
            guard let name = value.string, !name.isEmpty, name.utf8.count <= 256 else { throw fields.invalid(key, "must hold tool names (strings)") }
            names.append(name)
        }
        return names
    }
}
