import Loop

/// What a synthesis reports: audio as it is produced, then exactly one of `finished` or `failed`.
public enum SynthesisEvent: Sendable, Equatable {
    /// Mono samples at `sampleRate`, ready to resample and encode for the client.
    case audio([Int16], sampleRate: Int)
    case finished
    case failed(ModelError)
}

/// Speech synthesis, sentence by sentence as a reply streams. The speech issue brings the
/// providers (espeak-ng, OpenAI-compatible speech); until then replies are text only. `cancel()`
/// on the returned call stops it (barge-in).
public protocol Synthesizer: Sendable {
    var name: String { get }
    func speak(_ text: String, voice: String, on loop: EventLoop, _ onEvent: @escaping (SynthesisEvent) -> Void) -> any ModelCall
}
