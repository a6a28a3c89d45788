import Models
import Loop

/// A semantic end-of-turn model's word on a turn: has the speaker finished, going by what the
/// audio says (the words, the intonation), not by how long the silence after it has lasted.
public struct TurnVerdict: Sendable, Equatable {
    public let complete: Bool
    /// The model's probability that the turn is complete (0...1).
    public let probability: Double

    public init(complete: Bool, probability: Double) {
        self.complete = complete
        self.probability = probability
    }
}

/// Audio a recogniser already holds where the models run (the speech helper's stream of a turn):
/// `holder` is the connection that holds it, `name` its name there. An end-of-turn model on the
/// same connection names it instead of sending the turn's 256 KB again.
public struct HeldAudio: Sendable, Equatable {
    public let holder: ObjectIdentifier
    public let name: UInt64

    public init(holder: ObjectIdentifier, name: UInt64) {
        self.holder = holder
        self.name = name
    }
}

/// The turn an end-of-turn model is asked about: its last samples (mono at `sampleRate`, 16,000
/// or 8,000; the model reads the last 8 s at most, so no more are given), and, when the turn's
/// recogniser holds the same audio (`TranscriptionSession.heldAudio`), where. The samples are a
/// view of the session's buffer, read only if they must be sent.
public struct TurnAudio {
    public let samples: ArraySlice<Int16>
    public let sampleRate: Int
    public let held: HeldAudio?

    public init(samples: ArraySlice<Int16>, sampleRate: Int, held: HeldAudio?) {
        self.samples = samples
        self.sampleRate = sampleRate
        self.held = held
    }
}

/// A model that judges whether a turn is over (Smart Turn v3.2). Configuration shared by every
/// loop; each call runs on the loop it is given and answers there, once, unless cancelled.
/// `semantic_vad` asks it when the VAD hears a short silence (see `TurnEnding`).
public protocol EndOfTurnModel: Sendable {
    /// For logs and metrics ("smart-turn-v3.2").
    var name: String { get }
    /// Judges `turn`; reads its samples, if at all, before it returns.
    func judge(_ turn: TurnAudio, on loop: EventLoop,
               _ answer: @escaping (Result<TurnVerdict, ModelError>) -> Void) -> any ModelCall
}
