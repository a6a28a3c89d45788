import JSON

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

    public var id: String
    public var role: ChatMessage.Role
    public var status: Status
    public var content: [Content]

    public init(id: String, role: ChatMessage.Role, status: Status, content: [Content]) {
        self.id = id
        self.role = role
        self.status = status
        self.content = content
    }

    func json(dialect: Dialect) -> JSON {
        .object([
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
