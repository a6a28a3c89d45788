import Loop

/// The speech providers sessions use, and the worker pool their heavy work runs on. Empty: spoken
/// turns reach the model as their duration, and replies are text.
public struct SpeechServices: Sendable {
    public var transcriber: (any Transcriber)?
    public var synthesizer: (any Synthesizer)?
    public var pool: WorkerPool?
    /// The neural VAD sessions hear speech with; nil: the energy detector.
    public var voiceActivity: (any VoiceActivityModel)?

    public init(transcriber: (any Transcriber)? = nil, synthesizer: (any Synthesizer)? = nil, pool: WorkerPool? = nil,
                voiceActivity: (any VoiceActivityModel)? = nil) {
        self.voiceActivity = voiceActivity
        self.transcriber = transcriber
        self.synthesizer = synthesizer
        self.pool = pool
    }
}
