/// Which generation of the OpenAI Realtime API a client speaks. The event vocabulary is the same;
/// a few event names and the shape of session and audio-format objects differ.
public enum Dialect: Sendable, Equatable {
    /// The generally available API (`gpt-realtime`): `response.output_text.delta`, formats as
    /// `{"type":"audio/pcm","rate":24000}`, audio settings under `session.audio`.
    case ga
    /// The beta API, chosen by clients that send `OpenAI-Beta: realtime=v1`: `response.text.delta`,
    /// formats as `"pcm16"`, flat `input_audio_format` and `modalities` fields.
    case beta

    /// The dialect for a request's `OpenAI-Beta` header value (nil when the header is absent).
    public init(openAIBetaHeader value: String?) {
        // Comma-separated tokens, optional whitespace around each (RFC 9110 §5.6.1).
        let tokens = value?.split(separator: ",").map { $0.filter { $0 != " " && $0 != "\t" }.lowercased() } ?? []
        self = tokens.contains("realtime=v1") ? .beta : .ga
    }
}
