import Models
/// A neural voice-activity model (Silero VAD): for each short window of audio, the probability
/// that it is speech. The session engine turns those probabilities into turns
/// (`speech_started`, `speech_stopped`); the model only scores windows.
///
/// A model is stateful per audio stream (Silero carries a recurrent state and the last few ms of
/// the previous window), so each stream gets its own `VoiceActivityStream`, made when a session
/// starts sending audio and let go when it falls silent. A class, so that a session holds it in
/// two words rather than an existential's five.
public protocol VoiceActivityModel: AnyObject, Sendable {
    /// For logs and the listening line ("silero").
    var name: String { get }
    /// A new stream at `sampleRate` (16,000 or 8,000), or nil when the model takes no other rate
    /// or cannot make one now; the engine then hears that session with the energy detector.
    func makeStream(sampleRate: Int) -> (any VoiceActivityStream)?
    /// The same, its windows only staged (`batched`: `VoiceActivityStream.stage`), to be scored
    /// with every window this thread's streams staged, in one run, when the loop asks
    /// (`scoreStaged`) later in the same pass; a model that cannot batch scores them at once.
    func makeStream(sampleRate: Int, batched: Bool) -> (any VoiceActivityStream)?
    /// Scores every window this thread's batched streams staged since the last call, in one run
    /// of the model per rate; each stream then has its probabilities (`takeScored`).
    func scoreStaged()
}

extension VoiceActivityModel {
    public func makeStream(sampleRate: Int, batched: Bool) -> (any VoiceActivityStream)? {
        makeStream(sampleRate: sampleRate)
    }

    public func scoreStaged() {}
}

/// One audio stream's model state. Used from one thread at a time (the session's loop); released
/// when dropped.
public protocol VoiceActivityStream: AnyObject, Sendable {
    /// Samples in a window: 512 at 16 kHz, 256 at 8 kHz for Silero (32 ms).
    var windowSamples: Int { get }
    /// Memory the model holds for this stream, for the session's memory account.
    var stateBytes: Int { get }
    /// The probability (0...1) that `window` (exactly `windowSamples` samples, -1...1) is speech,
    /// given the windows before it in this stream.
    func speechProbability(of window: UnsafeBufferPointer<Float>) -> Float
    /// Whether this stream's windows are staged for its loop's batch (`stage`, `takeScored`)
    /// rather than scored at once (`speechProbability`).
    var isBatched: Bool { get }
    /// A batched stream's next window (copied), for its model's next `scoreStaged`.
    func stage(_ window: UnsafeBufferPointer<Float>)
    /// The probabilities scored since last taken, in the order their windows were staged.
    func takeScored(_ each: (Float) -> Void)
    /// `window` came and was not scored (taken for silence without the model): what of it the
    /// model reads before the next window (Silero's context) moves on.
    func skipped(_ window: UnsafeBufferPointer<Float>)
}

extension VoiceActivityStream {
    public var isBatched: Bool { false }
    public func stage(_ window: UnsafeBufferPointer<Float>) {}
    public func takeScored(_ each: (Float) -> Void) {}
    public func skipped(_ window: UnsafeBufferPointer<Float>) {}
}
