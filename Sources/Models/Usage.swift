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
    public static func estimatedTokens(_ text: String) -> Int { (text.utf8.count + 3) / 4 }

    /// The one estimate of input: each message's text, plus a few tokens of framing per message,
    /// as chat formats add.
    public static func estimatedInputTokens(_ messages: [ChatMessage]) -> Int {
        messages.reduce(0) { $0 + estimatedTokens($1.text) + 4 }
    }
}
