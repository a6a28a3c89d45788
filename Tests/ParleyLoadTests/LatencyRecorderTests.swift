import Testing
@testable import parley_load

@Suite struct LatencyRecorderTests {
    @Test func percentilesAreWithinATenthOfAPercentOfTheTruth() {
        var recorder = LatencyRecorder()
        for v in 1...100_000 as ClosedRange<UInt64> { recorder.record(v * 1000) }
        for (percent, truth) in [(50.0, 50_000_000.0), (90, 90_000_000), (99, 99_000_000), (99.9, 99_900_000)] {
            let measured = Double(recorder.percentile(percent))
            #expect(measured >= truth && measured <= truth * 1.001, "p\(percent): \(measured)")
        }
        #expect(recorder.percentile(100) == 100_000_000)
        #expect(recorder.count == 100_000)
    }

    @Test func mergingHalvesEqualsRecordingTheWhole() {
        var whole = LatencyRecorder(), odd = LatencyRecorder(), even = LatencyRecorder()
        var random = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            let v = UInt64.random(in: 1...50_000_000, using: &random)
            whole.record(v)
            if v % 2 == 0 { even.record(v) } else { odd.record(v) }
        }
        odd.merge(even)
        for p in [50.0, 99, 99.9] { #expect(odd.percentile(p) == whole.percentile(p)) }
        #expect(odd.count == whole.count && odd.maximum == whole.maximum && odd.minimum == whole.minimum)
    }

    @Test func extremeValuesAreClampedNotLost() {
        var recorder = LatencyRecorder()
        recorder.record(0)
        recorder.record(LatencyRecorder.highestTrackable * 2)
        #expect(recorder.count == 2 && recorder.minimum == 0 && recorder.maximum == LatencyRecorder.highestTrackable * 2)
    }

    @Test func survivesAJSONRoundTripBetweenProcesses() {
        var recorder = LatencyRecorder()
        for v in stride(from: 1000 as UInt64, to: 5_000_000, by: 997) { recorder.record(v) }
        let copy = LatencyRecorder(json: recorder.json)
        for p in [50.0, 90, 99, 99.9] { #expect(copy.percentile(p) == recorder.percentile(p)) }
        #expect(copy.count == recorder.count && copy.maximum == recorder.maximum)
    }
}
