import JSON
import Models

package extension Usage {
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
