import JSON
import Synchronization

/// A function the client declared (`session.tools`, or `response.create`'s `tools`): its name, what
/// it does, and the JSON Schema of its arguments as the client sent it.
public struct ToolDefinition: Sendable, Equatable {
    public let name: String
    public let description: String?
    public let parameters: JSON

    public init(name: String, description: String? = nil, parameters: JSON = .object([("type", .string("object")), ("properties", .object([]))])) {
        self.name = name
        self.description = description
        self.parameters = parameters
    }

    /// As the Realtime API writes it in `session.created`/`.updated`.
    public var json: JSON {
        var fields: [(String, JSON)] = [("type", .string("function")), ("name", .string(name))]
        if let description { fields.append(("description", .string(description))) }
        fields.append(("parameters", parameters))
        return .object(fields)
    }
}

/// `tool_choice`: may the model call a function, must it, or must it call this one.
public enum ToolChoice: Sendable, Equatable {
    case auto, none, required
    case function(String)
    /// A tool of this MCP server (this one, when named). A session turns it into `.function` or
    /// `.required` over the server's tools before a model sees it (`MCPToolState`); a provider
    /// that meets it anyway reads it as `required`.
    case mcp(serverLabel: String, name: String?)

    public var json: JSON {
        switch self {
        case .auto: .string("auto")
        case .none: .string("none")
        case .required: .string("required")
        case .function(let name): .object([("type", .string("function")), ("name", .string(name))])
        case .mcp(let label, let name):
            .object([("type", .string("mcp")), ("server_label", .string(label))] + (name.map { [("name", JSON.string($0))] } ?? []))
        }
    }
}

/// A function call the model made: the call's id (the client answers it by this), the function's
/// name and its arguments, a JSON text as the model wrote it.
public struct ToolCall: Sendable, Equatable {
    public var id: String
    public var name: String
    public var arguments: String

    public init(id: String, name: String, arguments: String) {
        self.id = id
        self.name = name
        self.arguments = arguments
    }
}

/// A session's declared tools, shared: ten thousand sessions that declare the same twenty tools
/// hold one copy of them (the Realtime API's agents all send the same list), not ten thousand.
public final class ToolSet: Sendable, Equatable {
    public let tools: [ToolDefinition]
    /// The canonical JSON text the set is known by.
    let key: String

    private init(tools: [ToolDefinition], key: String) {
        self.tools = tools
        self.key = key
    }

    public static func == (a: ToolSet, b: ToolSet) -> Bool { a === b || a.key == b.key }

    /// Sets kept for sharing; bounded, so clients that each send a different list cannot grow it
    /// without limit (past it, a new set is simply not shared).
    static let maxShared = 1024
    private static let shared = Mutex<[String: ToolSet]>([:])

    /// The one set with these tools: the same object for every session that declares them.
    public static func of(_ tools: [ToolDefinition]) -> ToolSet {
        let key = JSON.array(tools.map(\.json)).description
        return shared.withLock { table in
            if let existing = table[key] { return existing }
            let made = ToolSet(tools: tools, key: key)
            if table.count < maxShared { table[key] = made }
            return made
        }
    }
}

/// How a plainly worded request is matched to a tool's name, by the built-in agent and by
/// `parley mock-llm` alike: the name's words against the words said.
public enum ToolName {
    /// A name's words, lowercased: split on `_`, `-`, `.` and spaces and between a lowercase
    /// letter or digit and a capital (`getWeather` is "get", "weather").
    public static func words(of name: String) -> [String] {
        var out: [String] = []
        var current = ""
        var previous: Character?
        for c in name {
            if c == "_" || c == "-" || c == "." || c == " " {
                if !current.isEmpty { out.append(current) }
                current = ""
            } else {
                if c.isUppercase, let p = previous, p.isLowercase || p.isNumber, !current.isEmpty {
                    out.append(current)
                    current = ""
                }
                current += c.lowercased()
            }
            previous = c
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// A word said and a word of a name are the same, allowing for a plural on either.
    public static func same(_ said: String, _ word: String) -> Bool {
        said == word || said == word + "s" || said == word + "es" || word == said + "s" || word == said + "es"
    }
}
