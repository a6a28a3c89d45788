/// How `parley mock-llm` behaves. Every request may override these with headers:
/// `X-Mock-Fault`, `X-Mock-Tokens`, `X-Mock-First-Token-Ms`, `X-Mock-Tokens-Per-Second`.
public struct MockLLMOptions: Sendable {
    /// Seconds from the request to the first token.
    public var timeToFirstToken = 0.05
    public var tokensPerSecond = 50.0
    /// Words in each reply.
    public var replyTokens = 20
    public var fault = MockFault.none

    public init() {}
}

/// A failure the mock injects, to test how clients of an LLM API cope.
public enum MockFault: String, Sendable, CaseIterable {
    case none
    /// Answers 500 with an OpenAI-style error body.
    case serverError = "500"
    /// Answers 429 with `Retry-After: 1`.
    case rateLimited = "429"
    /// Sends the head and one token, then nothing, forever.
    case stall
    /// Sends a few tokens, then drops the connection without finishing the stream.
    case drop
}
