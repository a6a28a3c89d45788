/// What a session engine asks its caller to do.
public enum SessionAction: Sendable, Equatable {
    /// Send this event to the client (as JSON in the client's dialect).
    case send(ServerEvent)
    /// Call the model with this conversation and stream its reply back as `.modelDelta`, then
    /// `.modelFinished` or `.modelFailed`, all with this response id.
    case startModel(responseID: String, messages: [ChatMessage], options: ModelOptions)
    /// Stop the model call for this response; anything it still delivers is ignored.
    case cancelModel(responseID: String)
}

/// The per-response settings a model call needs besides the messages.
public struct ModelOptions: Sendable, Equatable {
    /// nil: no limit beyond the model's own.
    public var maxOutputTokens: Int?
    public var outputModalities: OutputModalities
    public var voice: String
    public var outputAudioFormat: RealtimeAudioFormat

    public init(maxOutputTokens: Int? = nil, outputModalities: OutputModalities = .text, voice: String = "alloy", outputAudioFormat: RealtimeAudioFormat = .pcm16) {
        self.maxOutputTokens = maxOutputTokens
        self.outputModalities = outputModalities
        self.voice = voice
        self.outputAudioFormat = outputAudioFormat
    }
}
