import JSON

/// Tokens a response used, as `response.done` reports them.
public struct Usage: Sendable, Equatable {
    public var inputTokens: Int
    public var outputTokens: Int
    public var totalTokens: Int { inputTokens + outputTokens }

    public init(inputTokens: Int, outputTokens: Int) {
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
    }

    /// A stand-in when the model reports no usage (the built-in agent, a cancelled stream): about
    /// four bytes of English text per token, the usual rule of thumb for BPE tokenizers. The one
    /// estimate of output, for usage and for `max_output_tokens` alike.
    public static func estimatedTokens(_ text: String) -> Int { estimatedTokens(bytes: text.utf8.count) }
    public static func estimatedTokens(bytes: Int) -> Int { (bytes + 3) / 4 }

    /// The framing chat formats add to each message, in tokens.
    public static let tokensPerMessage = 4

    /// The one estimate of input: each message's text, plus its framing.
    public static func estimatedInputTokens(_ messages: [ChatMessage]) -> Int {
        messages.reduce(0) { $0 + estimatedTokens($1.text) + tokensPerMessage }
    }
}
