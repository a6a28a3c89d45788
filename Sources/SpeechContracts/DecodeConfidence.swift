/// How sure a recogniser was of a decode, by its own measures: Whisper's average log-probability
/// of the tokens it wrote, and the probability it gave the no-speech token at the start
/// (faster-whisper's `avg_logprob` and `no_speech_prob`). A recogniser that gives no such measure
/// (pocketsphinx, an upload API) reports none, and its words are taken
/// as they come.
public struct DecodeConfidence: Sendable, Equatable {
    /// Mean natural-log probability of the decode's tokens, 0 (certain) and below.
    public var averageLogProbability: Double
    /// Probability, 0...1, that the audio held no speech.
    public var noSpeechProbability: Double

    public init(averageLogProbability: Double, noSpeechProbability: Double) {
        self.averageLogProbability = averageLogProbability
        self.noSpeechProbability = noSpeechProbability
    }
}
