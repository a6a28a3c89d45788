import JSON

/// One message of a conversation as a language model sees it.
public struct ChatMessage: Sendable, Equatable {
    public enum Role: String, Sendable, Equatable {
        case system, user, assistant
        /// A function's result, answering the assistant's call `toolCallID`.
        case tool
    }

    public var role: Role
    public var text: String
    /// The functions an assistant message calls (after its text, if it has any).
    public var toolCalls: [ToolCall] = []
    /// For a `.tool` message: the call it answers.
    public var toolCallID: String?
    /// For a user turn that was spoken but not transcribed: how long the speech lasted. The text
    /// then says so in words (see `untranscribedSpeech`), so any model can still answer it.
    public var spokenMilliseconds: Int?

    public init(role: Role, text: String, spokenMilliseconds: Int? = nil, toolCalls: [ToolCall] = [], toolCallID: String? = nil) {
        self.role = role
        self.text = text
        self.spokenMilliseconds = spokenMilliseconds
        self.toolCalls = toolCalls
        self.toolCallID = toolCallID
    }

    /// The user message that stands for an audio turn while no transcriber is configured:
    /// "[the user spoke for 2.4 s; no transcriber is configured]". A model cannot know what was
    /// said, but it can acknowledge that something was, which beats an empty message.
    public static func untranscribedSpeech(milliseconds: Int) -> ChatMessage {
        let tenths = (max(0, milliseconds) + 50) / 100
        return ChatMessage(role: .user, text: "[the user spoke for \(tenths / 10).\(tenths % 10) s; no transcriber is configured]",
                           spokenMilliseconds: milliseconds)
    }
}
