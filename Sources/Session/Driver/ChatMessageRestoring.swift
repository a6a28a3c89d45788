import JSON
import Models
import SessionEngine

extension ChatMessage {
    /// A conversation item as the store keeps it (its JSON, as `conversation.item.done` shows it)
    /// back as the model's message; nil for what is not an item (a kept `response.done`) or is
    /// not understood.
    static func restoring(_ item: String) -> ConversationHistory.Entry? {
        guard !item.isEmpty, let json = try? JSON(parsing: item), let id = json["id"]?.string else { return nil }
        switch json["type"]?.string {
        case "function_call":
            guard let callID = json["call_id"]?.string, let name = json["name"]?.string else { return nil }
            let call = ToolCall(id: callID, name: name, arguments: json["arguments"]?.string ?? "")
            return .init(id: id, message: ChatMessage(role: .assistant, text: "", toolCalls: [call]))
        case "function_call_output":
            guard let callID = json["call_id"]?.string else { return nil }
            return .init(id: id, message: ChatMessage(role: .tool, text: json["output"]?.string ?? "", toolCallID: callID))
        case "message":
            guard let role = json["role"]?.string.flatMap(ChatMessage.Role.init(rawValue:)) else { return nil }
            var texts: [String] = []
            var audio = false
            for part in json["content"]?.array ?? [] {
                if let type = part["type"]?.string, type.hasSuffix("audio") { audio = true }
                if let text = part["text"]?.string ?? part["transcript"]?.string { texts.append(text) }
            }
            let text = texts.joined(separator: " ")
            if audio && text.isEmpty && role == .user { return .init(id: id, message: .untranscribedSpeech(milliseconds: 0), audio: true) }
            return .init(id: id, message: ChatMessage(role: role, text: text), audio: audio)
        default:
            return nil
        }
    }
}
