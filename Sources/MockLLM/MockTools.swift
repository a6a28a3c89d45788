import Session
import JSON

/// A request the mock refuses, with the message of its 400.
struct MockBadRequest: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// A function a request declares: its name and its JSON Schema (OpenAI's `parameters`,
/// Anthropic's `input_schema`).
struct MockTool {
    let name: String
    let schema: JSON?
}

/// What the mock does with a request's tools, read from `tools`, `tool_choice` and
/// `parallel_tool_calls` (Anthropic: `tool_choice.disable_parallel_tool_use`).
struct MockToolRequest {
    enum Choice: Equatable { case auto, none, required, named(String) }

    var tools: [MockTool] = []
    var choice = Choice.auto
    var parallel = true

    static let validName = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")

    /// The tools and choice of `body`; throws for anything malformed (never traps).
    init(body: JSON, format: MockReply.Format) throws(MockBadRequest) {
        if let declared = body["tools"], !declared.isNull {
            guard let items = declared.array else { throw MockBadRequest("'tools' must be an array of tool objects") }
            for (i, item) in items.enumerated() {
                guard item.object != nil else { throw MockBadRequest("'tools[\(i)]' must be an object") }
                let tool = try format == .openAI ? Self.openAITool(item, at: i) : Self.anthropicTool(item, at: i)
                guard !tools.contains(where: { $0.name == tool.name }) else {
                    throw MockBadRequest("tool names must be unique: '\(tool.name)' is declared twice")
                }
                tools.append(tool)
            }
        }
        if format == .openAI {
            try readOpenAIChoice(body["tool_choice"])
            if let parallel = body["parallel_tool_calls"], !parallel.isNull {
                guard let flag = parallel.bool else { throw MockBadRequest("'parallel_tool_calls' must be a boolean") }
                self.parallel = flag
            }
        } else {
            try readAnthropicChoice(body["tool_choice"])
        }
        if case .named(let name) = choice, !tools.contains(where: { $0.name == name }) {
            throw MockBadRequest("'tool_choice' names '\(name)', which is not among the declared tools")
        }
        if choice == .required && tools.isEmpty {
            throw MockBadRequest("'tool_choice' requires a tool call but no tools are declared")
        }
    }

    private static func openAITool(_ item: JSON, at i: Int) throws(MockBadRequest) -> MockTool {
        if let type = item["type"], type.string != "function" {
            throw MockBadRequest("'tools[\(i)].type' must be \"function\"")
        }
        guard let function = item["function"], function.object != nil else {
            throw MockBadRequest("'tools[\(i)].function' must be an object")
        }
        let name = try Self.name(function["name"], at: "tools[\(i)].function.name")
        return MockTool(name: name, schema: try Self.schema(function["parameters"], at: "tools[\(i)].function.parameters"))
    }

    private static func anthropicTool(_ item: JSON, at i: Int) throws(MockBadRequest) -> MockTool {
        let name = try Self.name(item["name"], at: "tools[\(i)].name")
        return MockTool(name: name, schema: try Self.schema(item["input_schema"], at: "tools[\(i)].input_schema"))
    }

    private static func name(_ value: JSON?, at path: String) throws(MockBadRequest) -> String {
        guard let value, !value.isNull else { throw MockBadRequest("'\(path)' is missing") }
        guard let name = value.string, (1...64).contains(name.count), name.allSatisfy(validName.contains) else {
            throw MockBadRequest("'\(path)' must be 1 to 64 letters, digits, '_' or '-'")
        }
        return name
    }

    private static func schema(_ value: JSON?, at path: String) throws(MockBadRequest) -> JSON? {
        guard let value, !value.isNull else { return nil }
        guard value.object != nil else { throw MockBadRequest("'\(path)' must be a JSON Schema object") }
        return value
    }

    /// `"none"`, `"auto"`, `"required"` or `{"type":"function","function":{"name":…}}`.
    private mutating func readOpenAIChoice(_ value: JSON?) throws(MockBadRequest) {
        guard let value, !value.isNull else { return }
        switch value.string {
        case "none": choice = .none
        case "auto": choice = .auto
        case "required": choice = .required
        case .some(let other): throw MockBadRequest("'tool_choice' must be \"none\", \"auto\", \"required\" or a function, not \"\(other)\"")
        case nil:
            guard value["type"]?.string == "function", let name = value["function"]?["name"]?.string else {
                throw MockBadRequest("'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":…}}")
            }
            choice = .named(name)
        }
    }

    /// `{"type": "auto" | "any" | "none" | "tool", "name"?, "disable_parallel_tool_use"?}`.
    private mutating func readAnthropicChoice(_ value: JSON?) throws(MockBadRequest) {
        guard let value, !value.isNull else { return }
        guard value.object != nil else { throw MockBadRequest("'tool_choice' must be an object with a 'type'") }
        switch value["type"]?.string {
        case "auto": choice = .auto
        case "any": choice = .required
        case "none": choice = .none
        case "tool":
            guard let name = value["name"]?.string else { throw MockBadRequest("'tool_choice' of type \"tool\" needs a 'name'") }
            choice = .named(name)
        default: throw MockBadRequest("'tool_choice.type' must be \"auto\", \"any\", \"tool\" or \"none\"")
        }
        if let flag = value["disable_parallel_tool_use"], !flag.isNull {
            guard let disable = flag.bool else { throw MockBadRequest("'tool_choice.disable_parallel_tool_use' must be a boolean") }
            parallel = !disable
        }
    }

    /// The tools to call for a user's `prompt`: those it names, in the order it names them, as
    /// `tool_choice` allows; empty for a text reply.
    func calls(for prompt: String) -> [MockTool] {
        var chosen: [MockTool]
        switch choice {
        case .none: return []
        case .named(let name): chosen = tools.filter { $0.name == name }
        case .auto: chosen = MockToolMatcher.named(in: prompt, tools: tools)
        case .required:
            chosen = MockToolMatcher.named(in: prompt, tools: tools)
            if chosen.isEmpty { chosen = Array(tools.prefix(1)) }
        }
        return parallel ? chosen : Array(chosen.prefix(1))
    }
}

/// Which declared tools a prompt names, and the arguments the mock makes up for a call.
enum MockToolMatcher {
    /// Verbs a tool's name starts with that a person does not say: "weather" names `get_weather`.
    static let verbs: Set<String> = ["get", "set", "fetch", "lookup", "look", "find", "retrieve", "query",
                                     "search", "read", "load", "show", "list", "check"]

    /// The tools `prompt` names, by their whole name ("get_weather") or by all the words of it but
    /// the verbs ("weather"; plurals too), case-insensitively, in the order the prompt names them.
    static func named(in prompt: String, tools: [MockTool]) -> [MockTool] {
        let lowered = prompt.lowercased()
        // Tokens keep '_' and '-', so a whole name is one; words split those too.
        let tokens = lowered.split { !($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }.map(String.init)
        let words = tokens.enumerated().flatMap { i, token in
            token.split { $0 == "_" || $0 == "-" }.map { (String($0), i) }
        }
        var found: [(position: Int, order: Int, tool: MockTool)] = []
        for (order, tool) in tools.enumerated() {
            if let position = tokens.firstIndex(of: tool.name.lowercased()) {
                found.append((position, order, tool))
                continue
            }
            let nameWords = ToolName.words(of: tool.name)
            let wanted = nameWords.filter { !verbs.contains($0) }
            var positions: [Int] = []
            for word in wanted.isEmpty ? nameWords : wanted {
                guard let hit = words.first(where: { ToolName.same($0.0, word) }) else { positions = []; break }
                positions.append(hit.1)
            }
            if let position = positions.min() { found.append((position, order, tool)) }
        }
        return found.sorted { ($0.position, $0.order) < ($1.position, $1.order) }.map(\.tool)
    }

    /// Arguments for `schema` (a JSON Schema object): one value for each of its `properties`.
    static func arguments(for schema: JSON?, prompt: String) -> JSON {
        let properties = schema?["properties"]?.object ?? []
        return .object(properties.map { name, property in (name, value(for: property, named: name, prompt: prompt, depth: 0)) })
    }

    /// Property names that want a place: "city", "location", "place", … (or names containing them).
    static let placeWords = ["city", "location", "place", "town", "country", "destination", "region", "where"]

    static func value(for property: JSON, named name: String, prompt: String, depth: Int) -> JSON {
        if let constant = property["const"] { return constant }
        let enumeration = property["enum"]?.array ?? []
        switch schemaType(of: property) {
        case "string":
            let lowered = name.lowercased()
            if placeWords.contains(where: lowered.contains), let place = place(in: prompt) { return .string(place) }
            // An enum value the prompt says ("in fahrenheit"), else the first.
            let said = Set(prompt.lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init))
            if let spoken = enumeration.first(where: { $0.string.map { said.contains($0.lowercased()) } ?? false }) { return spoken }
            return enumeration.first ?? .string("example")
        case "integer", "number":
            if let first = enumeration.first { return first }
            var n = 1.0
            if let minimum = property["minimum"]?.double, minimum > n { n = minimum.rounded(.up) }
            if let maximum = property["maximum"]?.double, maximum < n { n = maximum.rounded(.down) }
            return .number(n)
        case "boolean": return enumeration.first ?? .bool(true)
        case "array": return .array([])
        case "object": return .object([])
        case "null": return .null
        default: return enumeration.first ?? .string("example")
        }
    }

    /// A property's type: `type` (the first that is not "null", if it lists several), else what its
    /// `enum`, `properties` or `items` imply, else "string".
    static func schemaType(of property: JSON) -> String {
        if let type = property["type"]?.string { return type }
        if let types = property["type"]?.array?.compactMap(\.string), let type = types.first(where: { $0 != "null" }) ?? types.first {
            return type
        }
        if let first = property["enum"]?.array?.first {
            switch first {
            case .number: return "number"
            case .bool: return "boolean"
            default: return "string"
            }
        }
        if property["properties"] != nil { return "object" }
        if property["items"] != nil { return "array" }
        return "string"
    }

    /// The capitalised words after "in" ("Paris", "New York"), without their punctuation.
    static func place(in prompt: String) -> String? {
        let words = prompt.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
        for (i, word) in words.enumerated() where word.lowercased() == "in" {
            var place: [Substring] = []
            for next in words[(i + 1)...] {
                let bare = next.drop { !($0.isLetter || $0.isNumber) }
                guard let first = bare.first, first.isUppercase else { break }
                let trimmed = bare.prefix { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "'" || $0 == "." }
                let clean = trimmed.hasSuffix(".") ? trimmed.dropLast() : trimmed
                guard !clean.isEmpty else { break }
                place.append(clean)
                if clean.count != next.count { break }  // punctuation after it ends the place
            }
            if !place.isEmpty { return place.joined(separator: " ") }
        }
        return nil
    }

    /// Whether the prompt asks for words before the call ("let me check …").
    static func wantsPreamble(_ prompt: String) -> Bool {
        let lowered = prompt.lowercased()
        return ["let me check", "let me see", "let me look", "let me find", "one moment", "hold on"].contains(where: lowered.contains)
    }
}

/// The output of a tool the conversation ends with, for the reply that uses it.
struct MockToolResult {
    var name: String?
    var output: String
    var isError = false

    /// The results the conversation ends with: OpenAI's trailing `role: tool` messages, or the
    /// `tool_result` blocks of Anthropic's last user message; nil if it ends otherwise.
    static func trailing(_ messages: [JSON], format: MockReply.Format) throws(MockBadRequest) -> [MockToolResult]? {
        guard let last = messages.last else { return nil }
        switch format {
        case .openAI:
            guard last["role"]?.string == "tool" else { return nil }
            var results: [MockToolResult] = []
            for (i, message) in messages.enumerated().reversed() {
                guard message["role"]?.string == "tool" else { break }
                guard let id = message["tool_call_id"]?.string else {
                    throw MockBadRequest("'messages[\(i)].tool_call_id' is missing: a tool message answers a call by its id")
                }
                let name = messages[..<i].reversed().lazy.compactMap { earlier in
                    earlier["tool_calls"]?.array?.first { $0["id"]?.string == id }?["function"]?["name"]?.string
                }.first
                results.insert(MockToolResult(name: name, output: text(message["content"])), at: 0)
            }
            return results
        case .anthropic:
            guard last["role"]?.string == "user", let blocks = last["content"]?.array else { return nil }
            let toolResults = blocks.enumerated().filter { $0.element["type"]?.string == "tool_result" }
            guard !toolResults.isEmpty else { return nil }
            var results: [MockToolResult] = []
            for (j, block) in toolResults {
                guard let id = block["tool_use_id"]?.string else {
                    throw MockBadRequest("'messages[\(messages.count - 1)].content[\(j)].tool_use_id' is missing")
                }
                let name = messages.dropLast().reversed().lazy.compactMap { earlier in
                    earlier["content"]?.array?.first { $0["type"]?.string == "tool_use" && $0["id"]?.string == id }?["name"]?.string
                }.first
                results.append(MockToolResult(name: name, output: text(block["content"]), isError: block["is_error"]?.bool == true))
            }
            return results
        }
    }

    /// A string, or the text of an array of text blocks.
    static func text(_ content: JSON?) -> String {
        if let text = content?.string { return text }
        return (content?.array ?? []).compactMap { $0["text"]?.string }.joined(separator: " ")
    }

    /// "The get_weather tool says: "18 C and sunny"." for each result.
    static func answer(_ results: [MockToolResult]) -> String {
        results.map { result in
            // One line, at most about 200 characters.
            var output = result.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            if output.count > 200 { output = String(output.prefix(200)) + "…" }
            let tool = result.name.map { "The \($0) tool" } ?? "The tool"
            return "\(tool) \(result.isError ? "failed" : "says"): \"\(output)\"."
        }.joined(separator: " ")
    }
}

/// A call the mock makes: its id, the tool's name and the arguments as JSON text.
struct MockToolCall {
    let id: String
    let name: String
    let arguments: JSON

    var argumentsText: String { arguments.description }

    /// The arguments text in two or three pieces, as a streaming API sends it.
    var argumentPieces: [String] {
        let characters = Array(argumentsText)
        let count = characters.count >= 12 ? 3 : characters.count >= 2 ? 2 : 1
        var pieces: [String] = []
        var start = 0
        for i in 1...count {
            let end = characters.count * i / count
            pieces.append(String(characters[start..<end]))
            start = end
        }
        return pieces
    }

    static func id(prefix: String) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var generator = SystemRandomNumberGenerator()
        return prefix + String((0..<24).map { _ in alphabet.randomElement(using: &generator)! })
    }
}
