import Models
import Loop

/// The speech providers sessions use, and the worker pool their heavy work runs on. Empty: spoken
/// turns reach the model as their duration, and replies are text.
public struct SpeechServices: Sendable {
    public var transcriber: (any Transcriber)?
    public var synthesizer: (any Synthesizer)?
    public var pool: WorkerPool?
    /// The neural VAD sessions hear speech with; nil: the energy detector.
    public var voiceActivity: (any VoiceActivityModel)?
    /// The model `semantic_vad` asks whether a turn is over; nil: silence alone ends turns.
    public var endOfTurn: (any EndOfTurnModel)?
    /// How far ahead of real time a reply's audio is sent (`--reply-lead-ms`): what the client
    /// buffers against network jitter, and what a barge-in cannot call back.
    public var replyLeadMs = 200

    public init(transcriber: (any Transcriber)? = nil, synthesizer: (any Synthesizer)? = nil, pool: WorkerPool? = nil,
                voiceActivity: (any VoiceActivityModel)? = nil, endOfTurn: (any EndOfTurnModel)? = nil) {
        self.voiceActivity = voiceActivity
        self.endOfTurn = endOfTurn
        self.transcriber = transcriber
        self.synthesizer = synthesizer
        self.pool = pool
    }
}
