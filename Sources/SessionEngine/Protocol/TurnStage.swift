/// One stage of a turn's timeline as `parley.turn.timeline` reports it: `end_of_turn`,
/// `transcription`, `model_request`, `first_token`, `first_sentence`, `synthesis`, `first_frame`,
/// or `total`, and how long it took.
public struct TurnStage: Sendable, Equatable {
    public let name: String
    public let milliseconds: Int

    public init(name: String, milliseconds: Int) {
        self.name = name
        self.milliseconds = milliseconds
    }
}
