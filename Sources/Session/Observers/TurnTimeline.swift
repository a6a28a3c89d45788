import Metrics
import SessionEngine

/// Where one turn's milliseconds go, from the user's last word to the reply's first audio frame
/// written: the driver marks each moment as it passes (monotonic nanoseconds), and the stages
/// come out as the time between consecutive marks. A value, so the arithmetic is a unit test.
///
/// Stages (the label of `parley_turn_stage_seconds`):
/// - `end_of_turn`: the last word (the VAD's end of speech) to the turn's end (`speech_stopped`);
/// - `transcription`: the turn's end to its final transcript (with a recogniser);
/// - `model_request`: the transcript (or the turn's end) to the model's request going out;
/// - `first_token`: the request to the model's first token (an external LLM's time, apart);
/// - `first_sentence`: the first token to the first sentence handed to the voice;
/// - `synthesis`: that sentence to its first synthesised audio;
/// - `first_frame`: that audio to the first frame written to the client (resampling, encoding);
/// - `total`: the last word to the first frame (to the first token for a text reply);
/// - `filler`: the last word to the filler said while a tool ran (`ToolFiller`), when one was:
///   apart from the others, as it overlaps them (the filler is often the first frame).
struct TurnTimeline: Sendable, Equatable {
    enum Mark: Int, CaseIterable, Sendable {
        case lastWord, turnEnd, transcript, modelRequest, firstToken, firstSentence, firstAudio, firstFrame
    }

    static let stages: [(name: String, from: Mark, to: Mark)] = [
        ("end_of_turn", .lastWord, .turnEnd), ("transcription", .turnEnd, .transcript), ("model_request", .transcript, .modelRequest),
        ("first_token", .modelRequest, .firstToken), ("first_sentence", .firstToken, .firstSentence), ("synthesis", .firstSentence, .firstAudio),
        ("first_frame", .firstAudio, .firstFrame),
    ]
    static let names = stages.map(\.name) + ["total", "filler"]

    private var marks = [UInt64?](repeating: nil, count: Mark.allCases.count)
    /// The turn's item and the response that answered it, for `parley.turn.timeline`.
    var itemID = ""
    var responseID: String?
    /// When the filler was said, if it was while the turn was timed.
    var fillerAt: UInt64?

    /// Marks `mark` at `nanoseconds`, once: a later call (a second sentence, a second token) keeps
    /// the first.
    mutating func mark(_ mark: Mark, at nanoseconds: UInt64) {
        if marks[mark.rawValue] == nil { marks[mark.rawValue] = nanoseconds }
    }

    func has(_ mark: Mark) -> Bool { marks[mark.rawValue] != nil }

    /// Each stage's seconds, for the stages whose end was marked: a stage runs from the latest
    /// mark before its end (so a turn without a transcript measures `model_request` from the
    /// turn's end), and `total` from the last word to the last mark.
    func stageSeconds() -> [(name: String, seconds: Double)] {
        stages().map { (Self.names[$0.index], $0.seconds) }
    }

    /// The stages marked, each by its place in `names`.
    func stages() -> [(index: Int, seconds: Double)] {
        var out: [(Int, Double)] = []
        for (index, stage) in Self.stages.enumerated() {
            guard let end = marks[stage.to.rawValue],
                  let start = marks[...stage.from.rawValue].reversed().compactMap({ $0 }).first else { continue }
            out.append((index, Double(Int64(bitPattern: end &- start)) / 1e9))
        }
        if let first = marks[Mark.lastWord.rawValue], let last = marks.compactMap({ $0 }).max() {
            out.append((Self.names.count - 2, Double(Int64(bitPattern: last &- first)) / 1e9))
            if let fillerAt { out.append((Self.names.count - 1, Double(Int64(bitPattern: fillerAt &- first)) / 1e9)) }
        }
        return out
    }

    /// Each stage marked, with its start and end (monotonic ns), as `stages()` measures them.
    func intervals() -> [(name: String, start: UInt64, end: UInt64)] {
        var out: [(String, UInt64, UInt64)] = []
        for stage in Self.stages {
            guard let end = marks[stage.to.rawValue],
                  let start = marks[...stage.from.rawValue].reversed().compactMap({ $0 }).first else { continue }
            out.append((stage.name, start, end))
        }
        return out
    }

    /// The first and last moments marked (the turn's span), when any.
    var span: (start: UInt64, end: UInt64)? {
        let marked = marks.compactMap { $0 }
        guard let first = marked.min(), let last = marked.max() else { return nil }
        return (first, last)
    }

    /// What `parley.turn.timeline` says, for a session that asked for it.
    var eventKind: ServerEvent.Kind {
        .turnTimeline(itemID: itemID, responseID: responseID, stages: namedStages)
    }

    /// The turn's stages by name, in whole milliseconds.
    var namedStages: [TurnStage] {
        stages().map { TurnStage(name: Self.names[$0.index], milliseconds: Int(($0.seconds * 1000).rounded())) }
    }
}
