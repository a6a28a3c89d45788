@testable import Session
import Testing

/// A turn's stages from its marks: consecutive, first mark kept, and adding up to the total.
@Suite struct TurnTimelineTests {
    @Test func everyStageOfASpokenReplyAddsUpToTheTotal() {
        var turn = TurnTimeline()
        let ms: UInt64 = 1_000_000
        for (mark, at) in [(TurnTimeline.Mark.lastWord, 1_000), (.turnEnd, 1_230), (.transcript, 1_260), (.modelRequest, 1_261),
                           (.firstToken, 1_300), (.firstSentence, 1_350), (.firstAudio, 1_480), (.firstFrame, 1_490)] {
            turn.mark(mark, at: UInt64(at) * ms)
        }
        // A second token does not move the first.
        turn.mark(.firstToken, at: 9_000 * ms)
        let stages = Dictionary(uniqueKeysWithValues: turn.stageSeconds().map { ($0.name, $0.seconds) })
        #expect(stages["end_of_turn"] == 0.23)
        #expect(stages["first_token"] == 0.039)
        #expect(stages["synthesis"] == 0.13)
        let parts = stages.filter { $0.key != "total" }.values.reduce(0, +)
        #expect(abs(parts - 0.49) < 1e-9 && stages["total"] == 0.49)
    }

    @Test func aTurnWithoutATranscriptMeasuresTheRequestFromTheTurnsEnd() {
        var turn = TurnTimeline()
        turn.mark(.lastWord, at: 0)
        turn.mark(.turnEnd, at: 500_000_000)
        turn.mark(.modelRequest, at: 501_000_000)
        turn.mark(.firstToken, at: 600_000_000)
        let stages = Dictionary(uniqueKeysWithValues: turn.stageSeconds().map { ($0.name, $0.seconds) })
        #expect(stages["transcription"] == nil)
        #expect(stages["model_request"] == 0.001)
        #expect(stages["total"] == 0.6)
        #expect(stages["first_frame"] == nil)
    }
}
