import JSON
import Models
import MCP

/// A message in the conversation as the Realtime API shows it (`"object": "realtime.item"`).
public struct ConversationItem: Sendable, Equatable {
    public enum Status: String, Sendable, Equatable {
        case completed, incomplete
        case inProgress = "in_progress"
    }

    public enum Content: Sendable, Equatable {
        /// A user's or system's text.
        case inputText(String)
        /// A user's speech; the transcript is nil until a transcriber provides one.
        case inputAudio(transcript: String?)
        /// A text reply.
        case outputText(String)
        /// A spoken reply, by its transcript.
        case outputAudio(transcript: String)
    }

    /// A function call or its output, which are items of their own in the Realtime API.
    public enum Function: Sendable, Equatable {
        case call(callID: String, name: String, arguments: String)
        case output(callID: String, output: String)
    }

    /// The items of MCP tools the server runs itself: a server's tool list, a call with its
    /// outcome, and the approval asked for a call and given.
    public enum MCP: Sendable, Equatable {
        case listTools(serverLabel: String, tools: [MCPTool])
        case call(MCPCall)
        case approvalRequest(serverLabel: String, name: String, arguments: String)
        case approvalResponse(approvalRequestID: String, approve: Bool, reason: String?)
    }

    /// An `mcp_call`: what was called, and once it has run, its output or its error.
    public struct MCPCall: Sendable, Equatable {
        public var serverLabel: String
        public var name: String
        public var arguments: String
        public var approvalRequestID: String?
        public var output: String?
        public var error: MCPError?

        public init(serverLabel: String, name: String, arguments: String, approvalRequestID: String? = nil, output: String? = nil, error: MCPError? = nil) {
            self.serverLabel = serverLabel
            self.name = name
            self.arguments = arguments
            self.approvalRequestID = approvalRequestID
            self.output = output
            self.error = error
        }
    }

    public var id: String
    public var role: ChatMessage.Role
    public var status: Status
    public var content: [Content]
    /// Set for a `function_call` or `function_call_output` item; nil for a message.
    public var function: Function?
    /// Set for an MCP item; nil otherwise.
    public var mcp: MCP?

    public init(id: String, role: ChatMessage.Role, status: Status, content: [Content], function: Function? = nil, mcp: MCP? = nil) {
        self.id = id
        self.role = role
        self.status = status
        self.content = content
        self.function = function
        self.mcp = mcp
    }

    package func json(dialect: Dialect) -> JSON {
        if let mcp { return Self.json(id: id, mcp) }
        switch function {
        case .call(let callID, let name, let arguments):
            return .object([
                ("id", .string(id)), ("object", .string("realtime.item")), ("type", .string("function_call")),
                ("status", .string(status.rawValue)), ("call_id", .string(callID)), ("name", .string(name)), ("arguments", .string(arguments)),
            ])
        case .output(let callID, let output):
            return .object([
                ("id", .string(id)), ("object", .string("realtime.item")), ("type", .string("function_call_output")),
                ("status", .string(status.rawValue)), ("call_id", .string(callID)), ("output", .string(output)),
            ])
        case nil:
            break
        }
        return .object([
            ("id", .string(id)),
            ("object", .string("realtime.item")),
            ("type", .string("message")),
            ("status", .string(status.rawValue)),
            ("role", .string(role.rawValue)),
            ("content", .array(content.map { $0.json(dialect: dialect) })),
        ])
    }
}

package extension ConversationItem {
    /// The MCP items as openai-python's `realtime_mcp_*` types spell them. A tool's `description`
    /// is always a string (the JavaScript SDK drops a list whose description is not).
    static func json(id: String, _ mcp: MCP) -> JSON {
        var members: [(String, JSON)] = [("id", .string(id)), ("object", .string("realtime.item"))]
        switch mcp {
        case .listTools(let label, let tools):
            members += [("type", .string("mcp_list_tools")), ("server_label", .string(label)),
                        ("tools", .array(tools.map { tool in
                            .object([("name", .string(tool.name)), ("description", .string(tool.description ?? "")), ("input_schema", tool.inputSchema)]
                                    + (tool.annotations.map { [("annotations", $0)] } ?? []))
                        }))]
        case .call(let call):
            members += [("type", .string("mcp_call")), ("server_label", .string(call.serverLabel)), ("name", .string(call.name)),
                        ("arguments", .string(call.arguments)), ("approval_request_id", call.approvalRequestID.map(JSON.string) ?? .null),
                        ("output", call.output.map(JSON.string) ?? .null), ("error", call.error?.json ?? .null)]
        case .approvalRequest(let label, let name, let arguments):
            members += [("type", .string("mcp_approval_request")), ("server_label", .string(label)), ("name", .string(name)),
                        ("arguments", .string(arguments))]
        case .approvalResponse(let requestID, let approve, let reason):
            members += [("type", .string("mcp_approval_response")), ("approval_request_id", .string(requestID)), ("approve", .bool(approve)),
                        ("reason", reason.map(JSON.string) ?? .null)]
        }
        return .object(members)
    }
}

package extension ConversationItem.Content {
    /// GA names a reply's parts `output_text` and `output_audio`; the beta `text` and `audio`.
    func json(dialect: Dialect) -> JSON {
        switch self {
        case .inputText(let text):
            .object([("type", .string("input_text")), ("text", .string(text))])
        case .inputAudio(let transcript):
            .object([("type", .string("input_audio")), ("transcript", transcript.map(JSON.string) ?? .null)])
        case .outputText(let text):
            .object([("type", .string(dialect == .ga ? "output_text" : "text")), ("text", .string(text))])
        case .outputAudio(let transcript):
            .object([("type", .string(dialect == .ga ? "output_audio" : "audio")), ("transcript", .string(transcript))])
        }
    }
}
