import JSON
import Models

/// The response object of `response.created` and `response.done` (`"object": "realtime.response"`).
public struct RealtimeResponse: Sendable, Equatable {
    public enum Status: String, Sendable, Equatable {
        case inProgress = "in_progress"
        case completed, cancelled, failed, incomplete
    }

    public enum StatusDetails: Sendable, Equatable {
        /// `reason` is `turn_detected` (the user spoke over the reply) or `client_cancelled`.
        case cancelled(reason: String)
        /// `reason` is e.g. `max_output_tokens`.
        case incomplete(reason: String)
        case failed(EventError)
    }

    public var id: String
    /// nil for an out-of-band response (`conversation: "none"`).
    public var conversationID: String?
    public var status: Status
    public var statusDetails: StatusDetails?
    /// The items the response produced (on `response.done`; empty on `response.created`).
    public var output: [ConversationItem]
    /// nil until the response is done.
    public var usage: Usage?
    public var outputModalities: OutputModalities
    public var voice: String
    public var outputAudioFormat: RealtimeAudioFormat
    public var maxOutputTokens: Int?
    /// The client's `metadata` from `response.create`, echoed as given.
    public var metadata: JSON?

    public init(id: String, conversationID: String?, status: Status, statusDetails: StatusDetails? = nil, output: [ConversationItem] = [],
                usage: Usage? = nil, outputModalities: OutputModalities, voice: String, outputAudioFormat: RealtimeAudioFormat, maxOutputTokens: Int?,
                metadata: JSON? = nil) {
        self.metadata = metadata
        self.id = id
        self.conversationID = conversationID
        self.status = status
        self.statusDetails = statusDetails
        self.output = output
        self.usage = usage
        self.outputModalities = outputModalities
        self.voice = voice
        self.outputAudioFormat = outputAudioFormat
        self.maxOutputTokens = maxOutputTokens
    }

    package func json(dialect: Dialect) -> JSON {
        var members: [(String, JSON)] = [
            ("object", .string("realtime.response")),
            ("id", .string(id)),
            ("status", .string(status.rawValue)),
            ("status_details", statusDetailsJSON),
            ("output", .array(output.map { $0.json(dialect: dialect) })),
            ("conversation_id", conversationID.map(JSON.string) ?? .null),
        ]
        let maxTokens: JSON = maxOutputTokens.map(JSON.int) ?? .string("inf")
        switch dialect {
        case .ga:
            members += [
                ("output_modalities", outputModalities.json(dialect: dialect)),
                ("max_output_tokens", maxTokens),
                ("audio", .object([("output", .object([("format", outputAudioFormat.json(dialect: dialect)), ("voice", .string(voice))]))])),
            ]
        case .beta:
            members += [
                ("modalities", outputModalities.json(dialect: dialect)),
                ("voice", .string(voice)),
                ("output_audio_format", outputAudioFormat.json(dialect: dialect)),
                ("max_output_tokens", maxTokens),
            ]
        }
        members += [("usage", usage?.json ?? .null), ("metadata", metadata ?? .null)]
        return .object(members)
    }

    private var statusDetailsJSON: JSON {
        switch statusDetails {
        case nil: .null
        case .cancelled(let reason): .object([("type", .string("cancelled")), ("reason", .string(reason))])
        case .incomplete(let reason): .object([("type", .string("incomplete")), ("reason", .string(reason))])
        case .failed(let error):
            .object([("type", .string("failed")), ("error", .object([("type", .string(error.type.rawValue)), ("code", .string(error.code)), ("message", .string(error.message))]))])
        }
    }
}
