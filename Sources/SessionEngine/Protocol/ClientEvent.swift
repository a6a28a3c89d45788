import JSON
import Models

/// A client event for the session engine, parsed and validated: the subset of the Realtime API's
/// client events that a voice agent needs, but for `input_audio_buffer.append`, whose audio the
/// connection takes (see `ClientMessage`, which parses both).
public struct ClientEvent: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `session.update` (or the beta's `transcription_session.update`): the settings to change.
        case sessionUpdate(SessionUpdate)
        /// `input_audio_buffer.commit`
        case inputAudioCommit
        /// `input_audio_buffer.clear`
        case inputAudioClear
        /// `conversation.item.create` with a text message.
        case conversationItemCreate(NewConversationItem)
        /// `response.create`, with its per-response overrides.
        case responseCreate(ResponseOverrides)
        /// `response.cancel`; `responseID` is optional in the API.
        case responseCancel(responseID: String?)
        /// `conversation.item.retrieve`: the item as the server holds it.
        case conversationItemRetrieve(itemID: String)
        /// `conversation.item.delete`
        case conversationItemDelete(itemID: String)
        /// `output_audio_buffer.clear`: cut off the spoken reply now.
        case outputAudioBufferClear
        /// `conversation.item.truncate`: the client played only `audioEndMs` of an assistant's audio.
        case conversationItemTruncate(itemID: String, contentIndex: Int, audioEndMs: Int)
    }

    /// The client's own `event_id`, echoed in any `error` event about this one.
    public var eventID: String?
    public var kind: Kind

    public init(eventID: String? = nil, _ kind: Kind) {
        self.eventID = eventID
        self.kind = kind
    }

    /// Client events of the Realtime API that Parley does not implement: they get an
    /// `unsupported_event` error rather than `unknown_event`, so the client knows it was understood.
    package static let unsupportedTypes: Set<String> = []

    /// The event of `type` (read by `ClientMessage.parse`), from its fields.
    package static func kind(of event: EventFields, type: String) throws(ProtocolError) -> Kind {
        switch type {
        case "session.update":
            guard let session = try event.object("session") else { throw event.missing("session") }
            return .sessionUpdate(try SessionUpdate.parse(session))
        case "transcription_session.update":
            guard let session = try event.object("session") else { throw event.missing("session") }
            return .sessionUpdate(try SessionUpdate.parseTranscription(session))
        case "input_audio_buffer.commit":
            return .inputAudioCommit
        case "input_audio_buffer.clear":
            return .inputAudioClear
        case "conversation.item.create":
            guard let item = try event.object("item") else { throw event.missing("item") }
            return .conversationItemCreate(try NewConversationItem.parse(item, previousItemID: try event.string("previous_item_id")))
        case "response.create":
            return .responseCreate(try ResponseOverrides.parse(try event.object("response")))
        case "response.cancel":
            return .responseCancel(responseID: try event.string("response_id"))
        case "output_audio_buffer.clear":
            return .outputAudioBufferClear
        case "conversation.item.retrieve":
            return .conversationItemRetrieve(itemID: try event.requiredString("item_id"))
        case "conversation.item.delete":
            return .conversationItemDelete(itemID: try event.requiredString("item_id"))
        case "conversation.item.truncate":
            guard let contentIndex = try event.integer("content_index", in: 0...Int(Int32.max)) else { throw event.missing("content_index") }
            guard let audioEndMs = try event.integer("audio_end_ms", in: 0...Int(Int32.max)) else { throw event.missing("audio_end_ms") }
            return .conversationItemTruncate(itemID: try event.requiredString("item_id"), contentIndex: contentIndex, audioEndMs: audioEndMs)
        case _ where unsupportedTypes.contains(type):
            throw ProtocolError(.unsupportedEvent, "event type '\(type)' is not supported by Parley", param: "type")
        default:
            throw ProtocolError(.unknownEvent, "unknown event type '\(type)'", param: "type")
        }
    }
}

/// What a client adds to the conversation with `conversation.item.create`: a message, or a
/// function call's output (the answer to the model's call), or a function call of its own.
public struct NewConversationItem: Sendable, Equatable {
    /// The client's id for the item, if it chose one (at most 32 bytes, as in the Realtime API).
    public var id: String?
    public var role: ChatMessage.Role
    /// The item's text parts, joined by newlines.
    public var text: String
    /// Set for a `function_call_output` or `function_call` item.
    public var function: ConversationItem.Function?
    /// `previous_item_id`: insert after this item rather than at the end (`"root"`: first).
    public var previousItemID: String?
    /// Set for an `mcp_approval_response`: the client's answer to an `mcp_approval_request`.
    public var approval: Approval?

    public struct Approval: Sendable, Equatable {
        public var requestID: String
        public var approve: Bool
        public var reason: String?
    }

    public init(id: String? = nil, role: ChatMessage.Role, text: String, function: ConversationItem.Function? = nil, previousItemID: String? = nil) {
        self.id = id
        self.role = role
        self.text = text
        self.function = function
        self.previousItemID = previousItemID
    }

    package static let maxIDBytes = 32
    /// A function's output, or a client-made call's arguments, at most this long: the history's
    /// whole text budget (`ConversationHistory`), which it could not outgrow anyway.
    public static let maxFunctionTextBytes = 32 * 1024

    package static func parse(_ item: EventFields, previousItemID: String? = nil) throws(ProtocolError) -> NewConversationItem {
        let id = try item.string("id")
        if let id, id.isEmpty || id.utf8.count > maxIDBytes {
            throw item.invalid("id", "must be 1 to \(maxIDBytes) bytes")
        }
        switch try item.string("type") ?? "message" {
        case "message": break
        case "function_call_output":
            let callID = try item.requiredString("call_id")
            let output = try item.requiredString("output")
            guard output.utf8.count <= maxFunctionTextBytes else {
                throw item.invalid("output", "is \(output.utf8.count) bytes; at most \(maxFunctionTextBytes) are allowed")
            }
            return NewConversationItem(id: id, role: .tool, text: "", function: .output(callID: callID, output: output), previousItemID: previousItemID)
        case "mcp_approval_response":
            let reason = try item.string("reason")
            if let reason, reason.utf8.count > 4096 { throw item.invalid("reason", "is longer than 4096 bytes") }
            guard let approve = try item.bool("approve") else { throw item.missing("approve") }
            var new = NewConversationItem(id: id, role: .user, text: "", previousItemID: previousItemID)
            new.approval = Approval(requestID: try item.requiredString("approval_request_id"), approve: approve, reason: reason)
            return new
        case "function_call":
            let callID = try item.requiredString("call_id")
            let name = try item.requiredString("name")
            let arguments = try item.string("arguments") ?? "{}"
            guard arguments.utf8.count <= maxFunctionTextBytes else {
                throw item.invalid("arguments", "is \(arguments.utf8.count) bytes; at most \(maxFunctionTextBytes) are allowed")
            }
            return NewConversationItem(id: id, role: .assistant, text: "", function: .call(callID: callID, name: name, arguments: arguments),
                                       previousItemID: previousItemID)
        case let type:
            throw item.invalid("type", "must be 'message', 'function_call_output', 'function_call' or 'mcp_approval_response', got '\(type)'")
        }
        guard let roleName = try item.string("role") else { throw item.missing("role") }
        guard let role = ChatMessage.Role(rawValue: roleName), role != .tool else {
            throw item.invalid("role", "must be 'user', 'system' or 'assistant', got '\(roleName)'")
        }
        guard let content = try item.array("content") else { throw item.missing("content") }
        guard !content.isEmpty else { throw item.invalid("content", "must hold at least one part") }
        var texts: [String] = []
        for (index, part) in content.enumerated() {
            let fields = EventFields(part, path: item.name("content[\(index)]"))
            guard part.object != nil else { throw item.invalid("content[\(index)]", "must be an object") }
            let type = try fields.requiredString("type")
            switch type {
            case "input_text", "text", "output_text":
                texts.append(try fields.requiredString("text"))
            case "input_audio", "audio", "output_audio":
                throw fields.invalid("type", "'\(type)' content is not supported; send audio with input_audio_buffer.append")
            default:
                throw fields.invalid("type", "must be 'input_text' or 'text', got '\(type)'")
            }
        }
        return NewConversationItem(id: id, role: role, text: texts.joined(separator: "\n"), previousItemID: previousItemID)
    }
}

/// What a `response.create` changes for that one response.
public struct ResponseOverrides: Sendable, Equatable {
    public var instructions: String?
    public var outputModalities: OutputModalities?
    public var maxOutputTokens: SessionUpdate.TokenLimit?
    /// This response's functions and choice, in place of the session's.
    public var tools: ToolSet?
    /// The MCP servers of `tools`, for this response only.
    public var mcpServers: [MCPServerEntry]?
    public var toolChoice: ToolChoice?
    /// Up to 16 string pairs the client attaches, echoed in `response.created` and `.done`.
    public var metadata: JSON?
    /// `conversation: "none"`: an out-of-band response, whose output stays out of the conversation.
    public var outOfBand = false
    /// The server's own words instead of the model's (a call's greeting, a filler while a tool
    /// runs); never a client's.
    package var scripted: Scripted?

    package struct Scripted: Sendable, Equatable {
        package var text: String
        /// Said while a tool runs (`ToolFiller`): a client's `response.create` waits for it.
        package var isFiller: Bool

        package init(text: String, isFiller: Bool) {
            self.text = text
            self.isFiller = isFiller
        }
    }
    /// `input`: the items the model sees instead of the conversation (an empty list: none).
    public var input: [InputItem]?

    /// One item of `response.input`: a new item, or a reference to one of the conversation's.
    public enum InputItem: Sendable, Equatable {
        case item(NewConversationItem)
        case reference(String)
    }

    public init(instructions: String? = nil, outputModalities: OutputModalities? = nil, maxOutputTokens: SessionUpdate.TokenLimit? = nil) {
        self.instructions = instructions
        self.outputModalities = outputModalities
        self.maxOutputTokens = maxOutputTokens
    }

    package static func parse(_ response: EventFields?) throws(ProtocolError) -> ResponseOverrides {
        guard let response else { return ResponseOverrides() }
        var overrides = ResponseOverrides()
        if let instructions = try response.string("instructions") {
            guard instructions.utf8.count <= SessionConfiguration.maxInstructionBytes else {
                throw response.invalid("instructions", "is longer than \(SessionConfiguration.maxInstructionBytes) bytes")
            }
            overrides.instructions = instructions
        }
        overrides.outputModalities = try SessionUpdate.modalities(response, "modalities")
        if let ga = try SessionUpdate.modalities(response, "output_modalities") { overrides.outputModalities = ga }
        overrides.maxOutputTokens = try SessionUpdate.tokenLimit(response, "max_response_output_tokens")
        if let ga = try SessionUpdate.tokenLimit(response, "max_output_tokens") { overrides.maxOutputTokens = ga }
        overrides.tools = try ToolsField.tools(response)
        overrides.mcpServers = try ToolsField.servers(response)
        overrides.toolChoice = try ToolsField.choice(response)
        overrides.outOfBand = try response.choice("conversation", ["auto", "none"]) == "none"
        if let input = try response.array("input") {
            guard input.count <= 64 else { throw response.invalid("input", "holds \(input.count) items; at most 64 are allowed") }
            var items: [InputItem] = []
            for (index, value) in input.enumerated() {
                guard value.object != nil else { throw response.invalid("input[\(index)]", "must be an object") }
                let item = EventFields(value, path: response.name("input[\(index)]"))
                if try item.string("type") == "item_reference" {
                    items.append(.reference(try item.requiredString("id")))
                } else {
                    items.append(.item(try NewConversationItem.parse(item)))
                }
            }
            overrides.input = items
        }
        if let metadata = try response.object("metadata") {
            // As the Realtime API limits it: 16 keys of up to 64 characters, string values of up to 512.
            let pairs = metadata.members.object ?? []
            guard pairs.count <= 16, pairs.allSatisfy({ $0.0.count <= 64 && ($0.1.string.map { $0.count <= 512 } ?? false) }) else {
                throw response.invalid("metadata", "must hold at most 16 keys of up to 64 characters, each with a string of up to 512")
            }
            overrides.metadata = metadata.members
        }
        return overrides
    }
}
