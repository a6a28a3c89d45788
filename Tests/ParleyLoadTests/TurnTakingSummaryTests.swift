import Loop
import Testing
@testable import parley_load

@Suite struct TurnTakingSummaryTests {
    @Test func nearestRankIsAValueThatWasMeasured() {
        let values: [Double] = [300, 100, 500, 200, 400]
        #expect(NearestRank.percentile(50, of: values) == 300)
        #expect(NearestRank.percentile(90, of: values) == 500)
        #expect(NearestRank.percentile(20, of: values) == 100)
        #expect(NearestRank.percentile(21, of: values) == 200)
        #expect(NearestRank.percentile(100, of: values) == 500)
        #expect(NearestRank.percentile(0, of: values) == 100)
        #expect(NearestRank.percentile(99, of: []) == nil)
        #expect(NearestRank.text(99, of: []) == "n/a")
        #expect(NearestRank.text(50, of: [248.4]) == "248 ms")
    }

    @Test func speechBoundsSkipThePaddingBelowFortyDecibels() {
        let samples: [Int16] = [0, 12, -300, 400, 0, -5_000, 327, 20, 0]
        let bounds = SpeechBounds(samples)
        #expect(bounds == SpeechBounds(samples, threshold: 328))
        #expect(bounds?.first == 3 && bounds?.last == 5)
        #expect(SpeechBounds.trimmed(samples) == [400, 0, -5_000])
        #expect(SpeechBounds([Int16](repeating: 100, count: 480)) == nil)
        #expect(SpeechBounds.trimmed([0, 0]).isEmpty)
    }

    @Test func aTallyCountsHitsOfRuns() {
        var tally = TurnTakingResults.Tally()
        tally.add(true)
        tally.add(false)
        tally.add(false)
        #expect(tally.text == "1 of 3")
    }

    @Test func thePlayerRunsOutAfterTheAudioItWasGivenAndWaitsForLateDeltas() {
        func delta(_ atMs: UInt64, _ audioMs: Double) -> RealtimeSpeaker.Received {
            RealtimeSpeaker.Received(type: "response.output_audio.delta", event: nil, at: atMs * 1_000_000, audioMs: audioMs)
        }
        // Two deltas ahead of time play back to back; a third that comes after a gap starts late.
        let end = TurnTakingCase.playbackEnd([delta(1_000, 100), delta(1_010, 100), delta(1_500, 100)])
        #expect(end == 1_600 * 1_000_000)
        #expect(TurnTakingCase.playbackEnd([delta(1_000, 100), delta(1_050, 100)]) == 1_200 * 1_000_000)
    }
}
