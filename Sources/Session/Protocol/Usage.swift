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
    static func estimatedTokens(_ text: String) -> Int { (text.utf8.count + 3) / 4 }

    /// The one estimate of input: each message's text, plus a few tokens of framing per message,
    /// as chat formats add.
    static func estimatedInputTokens(_ messages: [ChatMessage]) -> Int {
        messages.reduce(0) { $0 + estimatedTokens($1.text) + 4 }
    }

    /// Parley's models take text only, so every token is a text token.
    var json: JSON {
        .object([
            ("total_tokens", .int(totalTokens)),
            ("input_tokens", .int(inputTokens)),
            ("output_tokens", .int(outputTokens)),
            ("input_token_details", .object([("text_tokens", .int(inputTokens)), ("audio_tokens", .int(0)), ("cached_tokens", .int(0))])),
            ("output_token_details", .object([("text_tokens", .int(outputTokens)), ("audio_tokens", .int(0))])),
        ])
    }
}
