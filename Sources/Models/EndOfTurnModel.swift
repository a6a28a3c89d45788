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

/// A model that judges whether a turn is over (Smart Turn v3.2). Configuration shared by every
/// loop; each call runs on the loop it is given and answers there, once, unless cancelled.
/// `semantic_vad` asks it when the VAD hears a short silence (see `TurnEnding`).
public protocol EndOfTurnModel: Sendable {
    /// For logs and metrics ("smart-turn-v3.2").
    var name: String { get }
    /// Judges the turn in `samples` (mono at `sampleRate`, 16,000 or 8,000; the model reads the
    /// last 8 s at most, so no more need be sent).
    func judge(_ samples: ArraySlice<Int16>, sampleRate: Int, on loop: EventLoop,
               _ answer: @escaping (Result<TurnVerdict, ModelError>) -> Void) -> any ModelCall
}
