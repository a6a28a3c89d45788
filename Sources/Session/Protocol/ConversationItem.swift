import JSON
import Models

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

    public var id: String
    public var role: ChatMessage.Role
    public var status: Status
    public var content: [Content]
    /// Set for a `function_call` or `function_call_output` item; nil for a message.
    public var function: Function?

    public init(id: String, role: ChatMessage.Role, status: Status, content: [Content], function: Function? = nil) {
        self.id = id
        self.role = role
        self.status = status
        self.content = content
        self.function = function
    }

    func json(dialect: Dialect) -> JSON {
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

extension ConversationItem.Content {
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
