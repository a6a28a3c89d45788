import Models
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
        case .auto: chosen = ToolIntent.named(in: prompt, tools.map(\.name)).map { tools[$0] }
        case .required:
            chosen = ToolIntent.named(in: prompt, tools.map(\.name)).map { tools[$0] }
            if chosen.isEmpty { chosen = Array(tools.prefix(1)) }
        }
        return parallel ? chosen : Array(chosen.prefix(1))
    }
}

/// The mock's reading of a prompt beyond what `ToolIntent` (the built-in agent's reading, shared)
/// says: whether to talk before calling.
enum MockToolMatcher {
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
